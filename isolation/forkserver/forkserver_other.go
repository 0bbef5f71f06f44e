//go:build !linux

package forkserver

import (
	"fmt"
	"os"

	"github.com/execfarm/execfarm/isolation"
)

// Main reports that the fork server is not supported off Linux and
// returns 1.
func Main() int {
	fmt.Fprintln(os.Stderr, Serve(ConnFD))
	return 1
}

// Serve is not supported off Linux.
func Serve(fd int) error {
	return fmt.Errorf("forkserver: %w", isolation.ErrNotSupported)
}
