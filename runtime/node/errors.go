package node

import "errors"

var (
	// ErrNoBundle is returned when the runtime bundle's node_modules is not
	// installed; `npm ci --prefix runtime/node/bundle` installs it.
	ErrNoBundle = errors.New("node: runtime bundle not found")
	// ErrBadConfig is returned for a Config or allow-list that cannot be
	// passed to the prelude.
	ErrBadConfig = errors.New("node: invalid configuration")
	// ErrConflict is returned when two Config fields that exclude each
	// other are both set.
	ErrConflict = errors.New("node: conflicting configuration")
)

// ErrNoOutput is returned if esbuild reports success but writes no
// JavaScript; it indicates a bug, not bad input.
var ErrNoOutput = errors.New("node: esbuild produced no JavaScript")
