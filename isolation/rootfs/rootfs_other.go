//go:build !linux

package rootfs

import (
	"fmt"

	"github.com/execfarm/execfarm/isolation"
)

// Setup is not supported off Linux.
func Setup(cfg Config) error { return fmt.Errorf("rootfs: %w", isolation.ErrNotSupported) }
