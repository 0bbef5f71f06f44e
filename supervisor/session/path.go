package session

import (
	"fmt"
	"strings"

	"github.com/execfarm/execfarm/internal/quote"
	"github.com/execfarm/execfarm/isolation/rootfs"
)

// MaxPathBytes bounds a path in a request (PATH_MAX).
const MaxPathBytes = 4096

// ResolvePath returns p as an absolute, clean path inside a sandbox:
// absolute paths as they are, relative ones from the workspace
// (/workspace). It is lexical: symlinks are the mechanism's to resolve,
// inside the sandbox's root. Errors are a *FieldError naming field: an
// empty path, a NUL byte, more than MaxPathBytes bytes, or a `..` that
// climbs above the root ("/..", "../../x" from /workspace), which no
// path inside the sandbox can mean.
func ResolvePath(field, p string) (string, error) {
	switch {
	case p == "":
		return "", &FieldError{Field: field, Reason: "empty path"}
	case strings.IndexByte(p, 0) >= 0:
		return "", &FieldError{Field: field, Reason: "path holds a NUL byte"}
	case len(p) > MaxPathBytes:
		return "", &FieldError{Field: field, Reason: fmt.Sprintf("path is %d bytes; at most %d", len(p), MaxPathBytes)}
	}
	full := p
	if !strings.HasPrefix(p, "/") {
		full = rootfs.WorkspaceDir + "/" + p
	}
	var out []string
	for _, el := range strings.Split(full, "/") {
		switch el {
		case "", ".":
		case "..":
			if len(out) == 0 {
				return "", &FieldError{Field: field, Reason: fmt.Sprintf("%s climbs above the sandbox's root", quote.Q(p))}
			}
			out = out[:len(out)-1]
		default:
			out = append(out, el)
		}
	}
	return "/" + strings.Join(out, "/"), nil
}

// ResolveFilePath is ResolvePath for a path that must name a file, such
// as one an upload creates: a path whose last element is empty, "." or
// ".." (a trailing "/") names a directory, and is a *FieldError rather
// than a file made under the name without it.
func ResolveFilePath(field, p string) (string, error) {
	switch last := p[strings.LastIndexByte(p, '/')+1:]; {
	case p == "":
	case last == "" || last == "." || last == "..":
		return "", &FieldError{Field: field, Reason: fmt.Sprintf("%q names a directory (it ends in %q); a file's path ends in its name", p, "/"+last)}
	}
	return ResolvePath(field, p)
}
