//go:build !linux

package sandbox

import (
	"fmt"

	"github.com/execfarm/execfarm/isolation"
)

// SealedBinary is a sealed in-memory copy of an executable; Linux only.
type SealedBinary struct{}

// Seal makes a sealed copy of the executable at path; memfd sealing is
// Linux only, so here it returns an error wrapping ErrNotSupported.
func Seal(path string) (*SealedBinary, error) {
	return nil, fmt.Errorf("sandbox: seal worker binary: %w", isolation.ErrNotSupported)
}

// Source returns "" off Linux.
func (b *SealedBinary) Source() string { return "" }

// ExecPath returns "" off Linux.
func (b *SealedBinary) ExecPath() string { return "" }
