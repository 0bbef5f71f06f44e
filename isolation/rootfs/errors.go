package rootfs

import "errors"

// ErrInvalidPath is returned by SandboxPath for a path no file operation
// may take: empty after the workspace default is applied is not one of
// them, but a NUL byte, a path longer than PathMax, or ".." above the root
// are.
var ErrInvalidPath = errors.New("rootfs: invalid path")
