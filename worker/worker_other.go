//go:build !linux

package worker

import (
	"fmt"
	"os"
)

// serve is not supported off Linux: a sandbox needs Linux namespaces.
func serve() int {
	fmt.Fprintln(os.Stderr, "execfarm-worker: sandboxes need Linux")
	return 2
}
