//go:build !linux

package goja

import (
	"context"
	"fmt"
	"os"

	"github.com/execfarm/execfarm/runtime/keep"
)

// ServeEnv names the descriptor of a kept process's control socket
// (package runtime/keep); only Linux serves it.
const ServeEnv = keep.Env

// serve refuses: kept processes run in Linux sandboxes only.
func serve(context.Context, int, bool, bool, Options) int {
	fmt.Fprintln(os.Stderr, "execfarm-goja: a kept process needs Linux")
	return 2
}
