//go:build !linux

package host

import (
	"fmt"

	"github.com/execfarm/execfarm/isolation"
)

// detach returns an error wrapping isolation.ErrNotSupported off Linux.
func detach(mp string) error {
	return fmt.Errorf("unmount %s: %w", mp, isolation.ErrNotSupported)
}
