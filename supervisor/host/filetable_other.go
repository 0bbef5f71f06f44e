//go:build !linux

package host

import (
	"fmt"

	"github.com/execfarm/execfarm/isolation"
)

// ReserveFileTable returns an error wrapping isolation.ErrNotSupported off
// Linux, where there are no sandboxes.
func ReserveFileTable(slots int, memoryBytes, processes, fds int64) (before FileTable, now int64, err error) {
	return FileTable{}, 0, fmt.Errorf("host: file table: %w", isolation.ErrNotSupported)
}

// ReservePtys returns an error wrapping isolation.ErrNotSupported off
// Linux, where there are no sandboxes.
func ReservePtys(slots int) (before PtyTable, now int64, err error) {
	return PtyTable{}, 0, fmt.Errorf("host: pseudo-terminals: %w", isolation.ErrNotSupported)
}
