//go:build !linux

package host

import (
	"fmt"
	"os"

	"github.com/execfarm/execfarm/isolation"
)

// oNoFollow: no O_NOFOLLOW is needed where lockRange cannot lock.
const oNoFollow = 0

// lockRange needs Linux's open file description locks.
func lockRange(*os.File, uint64, uint64) error {
	return fmt.Errorf("host: uid window lock: %w", isolation.ErrNotSupported)
}
