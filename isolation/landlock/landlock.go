package landlock

import (
	"fmt"
	"path/filepath"
)

// Config says what the confined process may reach. Paths are absolute
// paths in the process's current root; each rule covers the whole tree
// beneath its path. A path that does not exist is an error.
type Config struct {
	// ReadOnly lists directories that may be read and executed from
	// ("/" for the whole root). Must not be empty.
	ReadOnly []string
	// ReadWrite lists directories where files may be created, written,
	// truncated, renamed (within them) and removed, e.g. "/workspace".
	ReadWrite []string
	// Devices lists device files or directories of devices ("/dev/pts")
	// that may be opened for reading and writing and receive ioctls,
	// e.g. "/dev/null".
	Devices []string
	// NoScope leaves abstract unix sockets and signals unscoped even where
	// the ABI (6+) could scope them. false = scope them.
	NoScope bool
}

func (c Config) validate() error {
	if len(c.ReadOnly) == 0 {
		return fmt.Errorf("%w: ReadOnly is empty", ErrConfig)
	}
	for _, list := range [][]string{c.ReadOnly, c.ReadWrite, c.Devices} {
		for _, p := range list {
			if !filepath.IsAbs(p) {
				return fmt.Errorf("%w: %q is not absolute", ErrConfig, p)
			}
		}
	}
	return nil
}
