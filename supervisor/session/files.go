package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/execfarm/execfarm/isolation/rootfs"
	"github.com/execfarm/execfarm/supervisor/metrics"
	"github.com/execfarm/execfarm/supervisor/principal"
)

// Bounds of ListFiles (seed 001's list_files).
const (
	DefaultMaxEntries = 1000
	MaxEntries        = 10000
)

// fileOp runs f on owner's sandbox id with path resolved (ResolvePath,
// naming field "path"), counted as activity. f's context ends with the
// call's or when the sandbox starts ending; f's error is then ErrNotReady
// (wrapped), the call's own context being live.
func (m *Manager) fileOp(ctx context.Context, owner principal.Principal, id, path string, f func(ctx context.Context, s *Sandbox, path string) error) error {
	abs, err := ResolvePath("path", path)
	if err != nil {
		return err
	}
	return m.fileOpAt(ctx, owner, id, abs, f)
}

// fileOpAt is fileOp on abs, a path already resolved.
func (m *Manager) fileOpAt(ctx context.Context, owner principal.Principal, id, abs string, f func(ctx context.Context, s *Sandbox, path string) error) error {
	s, err := m.Get(owner, id)
	if err != nil {
		return err
	}
	if err := s.beginFileOp(); err != nil {
		return err
	}
	defer s.endFileOp()
	callCtx := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	err = f(ctx, s, abs)
	if err != nil && s.ctx.Err() != nil && callCtx.Err() == nil {
		// The sandbox ended under the call, not the caller's doing: not
		// CANCELLED, which is for a call its client cancelled.
		return fmt.Errorf("sandbox %s ended during the file operation: %w", id, ErrNotReady)
	}
	return err
}

// Upload writes r's bytes to path in owner's sandbox id (mode's
// permission bits, 0 = 0644; parent directories created), all or
// nothing, and logs a file-written event. It returns the file's absolute
// path and the bytes written. Errors: ErrNotFound, ErrNotReady,
// *FieldError (path; also one that names a directory, ResolveFilePath), a
// *FileError: syscall.ENOSPC when the file does not fit in the workspace,
// r's error, the mechanism's.
func (m *Manager) Upload(ctx context.Context, owner principal.Principal, id, path string, mode uint32, r io.Reader) (abs string, n int64, err error) {
	if mode == 0 {
		mode = 0o644
	}
	resolved, err := ResolveFilePath("path", path)
	if err != nil {
		return "", 0, err
	}
	err = m.fileOpAt(ctx, owner, id, resolved, func(ctx context.Context, s *Sandbox, p string) error {
		abs = p
		cr := &countingReader{r: r}
		n, err = s.box.Upload(ctx, p, mode&0o7777, cr)
		m.cfg.Metrics.SessionFileBytes(metrics.FileIn, cr.n)
		if err != nil {
			return fileError("upload", p, err)
		}
		s.appendEvent(&Event{Kind: EventFileWritten, Path: p, Size: n})
		return nil
	})
	return abs, n, err
}

// Download opens the regular file at path in owner's sandbox id and calls
// send with its FileInfo and a reader of its content; bytes read count as
// downloaded. Errors: ErrNotFound, ErrNotReady, *FieldError (path), a
// *FileError (fs.ErrNotExist, the mechanism's), send's as it is.
func (m *Manager) Download(ctx context.Context, owner principal.Principal, id, path string, send func(FileInfo, io.Reader) error) error {
	return m.fileOp(ctx, owner, id, path, func(ctx context.Context, s *Sandbox, p string) error {
		info, rc, err := s.box.Download(ctx, p)
		if err != nil {
			return fileError("download", p, err)
		}
		defer rc.Close()
		cr := &countingReader{r: rc}
		err = send(info, cr)
		m.cfg.Metrics.SessionFileBytes(metrics.FileOut, cr.n)
		return err
	})
}

// ListFiles lists the directory at path in owner's sandbox id: at most
// max entries (0 = DefaultMaxEntries; at most MaxEntries), sorted by
// name, with the directory's absolute path and its number of entries.
// Errors: ErrNotFound, ErrNotReady, *FieldError (path, max_entries), a
// *FileError (fs.ErrNotExist, syscall.ENOTDIR, the mechanism's).
func (m *Manager) ListFiles(ctx context.Context, owner principal.Principal, id, path string, max int) (abs string, entries []FileInfo, total int64, err error) {
	switch {
	case max == 0:
		max = DefaultMaxEntries
	case max < 0 || max > MaxEntries:
		return "", nil, 0, &FieldError{Field: "max_entries", Reason: fmt.Sprintf("%d: want 1 to %d (0 = %d)", max, MaxEntries, DefaultMaxEntries)}
	}
	err = m.fileOp(ctx, owner, id, path, func(ctx context.Context, s *Sandbox, p string) error {
		abs = p
		entries, total, err = s.box.List(ctx, p, max)
		return fileError("list", p, err)
	})
	return abs, entries, total, err
}

// Stat describes path in owner's sandbox id; exists is false, with no
// error, when nothing is there. Errors: ErrNotFound, ErrNotReady,
// *FieldError (path), a *FileError (the mechanism's).
func (m *Manager) Stat(ctx context.Context, owner principal.Principal, id, path string) (info FileInfo, exists bool, err error) {
	err = m.fileOp(ctx, owner, id, path, func(ctx context.Context, s *Sandbox, p string) error {
		info, exists, err = s.box.Stat(ctx, p)
		return fileError("stat", p, err)
	})
	return info, exists, err
}

// Remove removes path in owner's sandbox id (a symlink itself, never its
// target; a directory when empty or recursive) and logs a file-removed
// event. Errors: ErrNotFound, ErrNotReady, *FieldError (path; the root
// and the workspace itself cannot be removed), a *FileError
// (fs.ErrNotExist, syscall.ENOTEMPTY, the mechanism's).
func (m *Manager) Remove(ctx context.Context, owner principal.Principal, id, path string, recursive bool) error {
	return m.fileOp(ctx, owner, id, path, func(ctx context.Context, s *Sandbox, p string) error {
		if p == "/" || p == "/workspace" {
			return &FieldError{Field: "path", Reason: fmt.Sprintf("%s cannot be removed", p)}
		}
		if err := s.box.Remove(ctx, p, recursive); err != nil {
			return fileError("remove", p, err)
		}
		s.appendEvent(&Event{Kind: EventFileRemoved, Path: p})
		return nil
	})
}

// Mkdir creates the directory path in owner's sandbox id (mode's
// permission bits, 0 = 0755; with parents, missing parents too and an
// existing directory is no error) and logs a directory-made event.
// Errors: ErrNotFound, ErrNotReady, *FieldError (path), a *FileError
// (fs.ErrExist, fs.ErrNotExist for a missing parent without parents, the
// mechanism's).
func (m *Manager) Mkdir(ctx context.Context, owner principal.Principal, id, path string, mode uint32, parents bool) error {
	if mode == 0 {
		mode = 0o755
	}
	return m.fileOp(ctx, owner, id, path, func(ctx context.Context, s *Sandbox, p string) error {
		if err := s.box.Mkdir(ctx, p, mode&0o7777, parents); err != nil {
			return fileError("mkdir", p, err)
		}
		s.appendEvent(&Event{Kind: EventDirectoryMade, Path: p})
		return nil
	})
}

// Move moves source to destination in owner's sandbox id (rename: a
// file, a symlink itself or a directory; the destination's parent must
// exist) and logs a file-moved event. It returns both absolute paths.
// Errors: ErrNotFound, ErrNotReady, *FieldError (source, destination:
// as ResolvePath, the root or the workspace itself, a destination inside
// the source), a *FileError (fs.ErrNotExist for a missing source or
// destination parent, fs.ErrExist for an existing destination without
// overwrite, syscall.EISDIR, ENOTDIR, ENOTEMPTY, EBUSY across mounts, the
// mechanism's).
func (m *Manager) Move(ctx context.Context, owner principal.Principal, id, source, destination string, overwrite bool) (src, dst string, err error) {
	if src, err = ResolvePath("source", source); err != nil {
		return "", "", err
	}
	if dst, err = ResolvePath("destination", destination); err != nil {
		return "", "", err
	}
	for _, p := range []struct{ field, path string }{{"source", src}, {"destination", dst}} {
		if p.path == "/" || p.path == rootfs.WorkspaceDir {
			return "", "", &FieldError{Field: p.field, Reason: fmt.Sprintf("%s cannot be moved or replaced", p.path)}
		}
	}
	if dst == src || strings.HasPrefix(dst, src+"/") {
		return "", "", &FieldError{Field: "destination", Reason: fmt.Sprintf("%s is %s itself or inside it", dst, src)}
	}
	err = m.fileOpAt(ctx, owner, id, src, func(ctx context.Context, s *Sandbox, p string) error {
		err := s.box.Move(ctx, src, dst, overwrite)
		var fe *FieldError
		if errors.As(err, &fe) && fe.Field == "path" {
			// The mechanism's refusal of the pair (a directory moved
			// below itself through a link): the destination's fault.
			return &FieldError{Field: "destination", Reason: fe.Reason}
		}
		if err != nil {
			return fileError("move", src+" to "+dst, err)
		}
		s.appendEvent(&Event{Kind: EventFileMoved, Path: src, Destination: dst})
		return nil
	})
	return src, dst, err
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
