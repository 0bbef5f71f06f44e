package rootfs

import (
	"fmt"
	"strings"
)

// PathMax is the longest path, in bytes, a file operation on a sandbox
// takes (the kernel's PATH_MAX, 4096, counts the terminating NUL).
const PathMax = 4095

// SandboxPath returns the absolute, lexically clean form of p, a path a
// client names inside a sandbox: absolute, or relative to WorkspaceDir (""
// is WorkspaceDir itself). "." and empty components are dropped and ".."
// removes the component before it, lexically, before anything is
// resolved; a ".." that would climb above the root is refused rather than
// ignored, because a client that writes one means a place the sandbox
// does not have. Symbolic links are not looked at here: the worker
// resolves the result inside the sandbox's root (openat2 with
// RESOLVE_IN_ROOT), where a link cannot lead out either.
//
// Errors wrap ErrInvalidPath: a NUL byte, more than PathMax bytes (before
// or after the workspace is prefixed), or ".." above the root.
func SandboxPath(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%w: %q holds a NUL byte", ErrInvalidPath, p)
	}
	if len(p) > PathMax {
		return "", fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidPath, len(p), PathMax)
	}
	full := p
	if !strings.HasPrefix(p, "/") {
		full = WorkspaceDir + "/" + p
	}
	parts := make([]string, 0, strings.Count(full, "/"))
	for _, c := range strings.Split(full, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(parts) == 0 {
				return "", fmt.Errorf("%w: %q climbs above the sandbox's root", ErrInvalidPath, p)
			}
			parts = parts[:len(parts)-1]
		default:
			parts = append(parts, c)
		}
	}
	out := "/" + strings.Join(parts, "/")
	if len(out) > PathMax {
		return "", fmt.Errorf("%w: %d bytes with the workspace, more than %d", ErrInvalidPath, len(out), PathMax)
	}
	return out, nil
}
