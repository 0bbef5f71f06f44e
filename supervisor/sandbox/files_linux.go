package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/worker/plugin"
)

// The file calls of a session sandbox. Paths are absolute or relative to
// /workspace, and the worker resolves them inside the sandbox's own root
// as the sandbox user (worker/fsroot_linux.go): a symbolic link or ".."
// planted by the sandboxed program cannot lead a call to a host path or
// to another sandbox's file. Every transfer is streamed in chunks of at
// most ChunkBytes (uploads) or 64 KiB (downloads), under gRPC flow
// control on a connection whose windows are bounded (sessionDialOptions),
// so neither side holds a whole file. At most MaxConcurrentFileCalls run
// at once per sandbox (the worker's descriptors are the sandbox's). Errors
// are *FileError wrapping one of the sentinels of errors.go.

// Upload writes what r yields to path (mode&0777 as its permission bits;
// 0 = 0644), creating missing parent directories (0755). The bytes go to
// a hidden file next to path that replaces path (a file or symbolic link;
// never followed) only once r has ended: an upload that fails (the
// workspace is full: ErrNoSpace), or whose r or ctx fails, leaves no file
// behind. It returns the bytes written. Errors: ErrNotSession,
// ErrInvalidPath, ErrNoSpace, ErrPermission, ErrIsDirectory (path is a
// directory), ErrNotDirectory (a parent is a file), r's error as is.
func (s *Sandbox) Upload(ctx context.Context, path string, mode uint32, r io.Reader) (int64, error) {
	if s.sess == nil {
		return 0, ErrNotSession
	}
	done, err := s.sess.fileTurn(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := s.worker.Upload(ctx)
	if err != nil {
		return 0, sessionError("upload", path, err)
	}
	hdr := &workerv1.UploadRequest{Part: &workerv1.UploadRequest_Header{Header: &workerv1.UploadHeader{Path: path, Mode: mode}}}
	if err := stream.Send(hdr); err != nil {
		return 0, sessionError("upload", path, closeError(stream, err))
	}
	// One buffer for the whole transfer: Send has marshalled the message
	// into its own buffer when it returns (no stats handler holds it).
	buf := make([]byte, ChunkBytes)
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			msg := &workerv1.UploadRequest{Part: &workerv1.UploadRequest_Data{Data: buf[:n]}}
			if err := stream.Send(msg); err != nil {
				return 0, sessionError("upload", path, closeError(stream, err))
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return 0, rerr // cancel (deferred) ends the call: the worker removes its file
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return 0, sessionError("upload", path, err)
	}
	return resp.GetBytes(), nil
}

// closeError returns the call's status after a Send failed with io.EOF
// (the worker ended the call).
func closeError(stream workerv1.Worker_UploadClient, sendErr error) error {
	if sendErr != io.EOF {
		return sendErr
	}
	if _, err := stream.CloseAndRecv(); err != nil {
		return err
	}
	return sendErr
}

// FileReader is a download in progress: Info first, then the file's
// bytes through Read or WriteTo. Close it (it ends the call).
type FileReader struct {
	path   string
	info   FileInfo
	stream workerv1.Worker_DownloadClient
	cancel context.CancelFunc
	done   func() // ends its file-call turn
	once   sync.Once
	buf    []byte
	err    error
}

// Download opens the regular file at path (a final symbolic link is
// followed, inside the sandbox's root) for reading; the download holds one
// of the sandbox's MaxConcurrentFileCalls turns until Close. Errors:
// ErrNotSession,
// ErrInvalidPath, ErrNotExist, ErrPermission, ErrIsDirectory,
// ErrNotRegular.
func (s *Sandbox) Download(ctx context.Context, path string) (*FileReader, error) {
	if s.sess == nil {
		return nil, ErrNotSession
	}
	done, err := s.sess.fileTurn(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	fail := func(err error) (*FileReader, error) {
		cancel()
		done()
		return nil, err
	}
	stream, err := s.worker.Download(ctx, &workerv1.DownloadRequest{Path: path})
	if err != nil {
		return fail(sessionError("download", path, err))
	}
	first, err := stream.Recv()
	if err != nil {
		return fail(sessionError("download", path, err))
	}
	fi := first.GetInfo()
	if fi == nil {
		return fail(fmt.Errorf("sandbox: download %s: the worker sent no file info first", path))
	}
	return &FileReader{path: path, info: fileInfo(fi), stream: stream, cancel: cancel, done: done}, nil
}

// Info describes the file as opened (its size then: a file the sandbox
// changes meanwhile yields what it holds when read).
func (r *FileReader) Info() FileInfo { return r.info }

// next receives the next chunk into r.buf; false at the end or an error
// (r.err).
func (r *FileReader) next() bool {
	for len(r.buf) == 0 {
		if r.err != nil {
			return false
		}
		msg, err := r.stream.Recv()
		switch {
		case err == io.EOF:
			r.err = io.EOF
		case err != nil:
			r.err = sessionError("download", r.path, err)
		default:
			r.buf = msg.GetData()
		}
	}
	return true
}

// Read reads the file's next bytes; io.EOF at its end.
func (r *FileReader) Read(p []byte) (int, error) {
	if !r.next() {
		return 0, r.err
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// WriteTo writes the rest of the file to w, chunk by chunk as they come
// (io.Copy uses it), and returns the bytes written.
func (r *FileReader) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for r.next() {
		m, err := w.Write(r.buf)
		n += int64(m)
		r.buf = r.buf[m:]
		if err != nil {
			return n, err
		}
	}
	if r.err == io.EOF {
		return n, nil
	}
	return n, r.err
}

// Close ends the download (and its file-call turn). Idempotent.
func (r *FileReader) Close() error {
	r.once.Do(func() {
		r.cancel()
		r.done()
	})
	return nil
}

// List lists the directory path: the maxEntries entries (0 =
// DefaultListEntries, at most MaxListEntries) whose names come first in
// byte order, described by lstat, with the directory's total count;
// fewer when their paths and link targets pass MaxListBytes (Truncated).
// The worker reads every name but describes and sends only maxEntries
// within MaxListBytes, and the supervisor keeps at most MaxListBytes of
// them, one listing at a time per sandbox (MaxConcurrentListings): a
// directory of any size costs either side O(MaxListBytes). Errors:
// ErrNotSession, ErrInvalidPath (also a maxEntries out of range),
// ErrNotExist, ErrNotDirectory, ErrPermission.
func (s *Sandbox) List(ctx context.Context, path string, maxEntries int) (Listing, error) {
	if s.sess == nil {
		return Listing{}, ErrNotSession
	}
	if maxEntries < 0 || maxEntries > MaxListEntries {
		return Listing{}, &FileError{Op: "list", Path: path, Err: ErrInvalidPath, Detail: fmt.Sprintf("max entries %d: at most %d", maxEntries, MaxListEntries)}
	}
	listed, err := s.sess.listTurn(ctx)
	if err != nil {
		return Listing{}, err
	}
	defer listed()
	done, err := s.sess.fileTurn(ctx)
	if err != nil {
		return Listing{}, err
	}
	defer done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := s.worker.List(ctx, &workerv1.ListRequest{Path: path, MaxEntries: int32(maxEntries)})
	if err != nil {
		return Listing{}, sessionError("list", path, err)
	}
	var l Listing
	received, kept, full := 0, 0, false
	for {
		msg, err := stream.Recv()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return Listing{}, sessionError("list", path, err)
		}
		if received += len(msg.GetEntries()); received > MaxListEntries {
			return Listing{}, fmt.Errorf("sandbox: list %s: the worker sent more than %d entries", path, MaxListEntries)
		}
		// Past MaxListBytes the stream is read to its end for the total,
		// each message dropped as it comes.
		for _, fi := range msg.GetEntries() {
			if full {
				break
			}
			n := len(path) + 1 + len(fi.GetName()) + len(fi.GetSymlinkTarget())
			if full = kept+n > MaxListBytes; !full {
				kept += n
				l.Entries = append(l.Entries, fileInfo(fi))
			}
		}
		if msg.GetDone() {
			l.TotalEntries, l.Truncated = msg.GetTotalEntries(), msg.GetTruncated() || full
			return l, nil
		}
	}
}

// Stat describes path without following a final symbolic link. A missing
// path (or one through a file) is exists false and no error. Errors:
// ErrNotSession, ErrInvalidPath, ErrPermission.
func (s *Sandbox) Stat(ctx context.Context, path string) (fi FileInfo, exists bool, err error) {
	var resp *workerv1.StatResponse
	err = s.fileCall(ctx, "stat", path, func() (err error) {
		resp, err = s.worker.Stat(ctx, &workerv1.StatRequest{Path: path})
		return err
	})
	if err != nil || !resp.GetExists() {
		return FileInfo{}, false, err
	}
	return fileInfo(resp.GetInfo()), true, nil
}

// Remove removes the file, symbolic link (never followed) or empty
// directory at path; with recursive, a directory and everything below it,
// never following a link nor crossing into another mount. Errors:
// ErrNotSession, ErrInvalidPath (also the root), ErrNotExist,
// ErrNotEmpty, ErrPermission, ErrBusy (a mount point, a tree crossing
// into another mount or deeper than 524288 levels).
func (s *Sandbox) Remove(ctx context.Context, path string, recursive bool) error {
	return s.fileCall(ctx, "remove", path, func() error {
		_, err := s.worker.Remove(ctx, &workerv1.RemoveRequest{Path: path, Recursive: recursive})
		return err
	})
}

// Mkdir creates the directory path with exactly mode&0777 (0 = 0755);
// with parents, also its missing parents (0755 less the worker's umask),
// and an existing directory is no error. Errors: ErrNotSession,
// ErrInvalidPath, ErrExist, ErrNotExist (a parent, without parents),
// ErrNotDirectory, ErrPermission, ErrNoSpace.
func (s *Sandbox) Mkdir(ctx context.Context, path string, mode uint32, parents bool) error {
	return s.fileCall(ctx, "mkdir", path, func() error {
		_, err := s.worker.Mkdir(ctx, &workerv1.MkdirRequest{Path: path, Mode: mode, Parents: parents})
		return err
	})
}

// Move renames source to destination (a final symbolic link of either is
// the link itself); without overwrite an existing destination is
// ErrExist. Errors: ErrNotSession, ErrInvalidPath (also the root),
// ErrNotExist, ErrExist, ErrIsDirectory, ErrNotDirectory, ErrNotEmpty,
// ErrPermission, ErrBusy (across mounts: EXDEV).
func (s *Sandbox) Move(ctx context.Context, source, destination string, overwrite bool) error {
	return s.fileCall(ctx, "move", source, func() error {
		_, err := s.worker.Move(ctx, &workerv1.MoveRequest{Source: source, Destination: destination, Overwrite: overwrite})
		return err
	})
}

// fileCall runs the unary worker call call (op on path) in one of the
// sandbox's file-call turns and maps its error (sessionError).
func (s *Sandbox) fileCall(ctx context.Context, op, path string, call func() error) error {
	if s.sess == nil {
		return ErrNotSession
	}
	done, err := s.sess.fileTurn(ctx)
	if err != nil {
		return err
	}
	defer done()
	if err := call(); err != nil {
		return sessionError(op, path, err)
	}
	return nil
}

// reasonErrors maps the worker's ErrorDetail reasons (errno names and
// plugin's reasons) to this package's errors.
var reasonErrors = map[string]error{
	"ENOENT": ErrNotExist, "EEXIST": ErrExist,
	"EACCES": ErrPermission, "EPERM": ErrPermission, "EROFS": ErrPermission, "ELOOP": ErrPermission,
	"ENOSPC": ErrNoSpace, "EDQUOT": ErrNoSpace, "EFBIG": ErrNoSpace,
	"ENOTDIR": ErrNotDirectory, "EISDIR": ErrIsDirectory, "ENOTEMPTY": ErrNotEmpty,
	"EBUSY": ErrBusy, "EXDEV": ErrBusy, "ETXTBSY": ErrBusy,
	"ENAMETOOLONG":           ErrInvalidPath,
	"EINVAL":                 ErrInvalidPath, // a move of a directory into itself
	plugin.ReasonInvalidPath: ErrInvalidPath,
	plugin.ReasonNotRegular:  ErrNotRegular,
}

// sessionError is the one map from the worker's answers to a session call
// (Exec: path "") to this package's errors: by the ErrorDetail reason when
// the worker gave one, else by code. Cancellation keeps context's errors.
func sessionError(op, path string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("sandbox: %s %s: %w", op, path, err)
	}
	var sentinel error
	for _, d := range st.Details() {
		if detail, ok := d.(*workerv1.ErrorDetail); ok {
			sentinel = reasonErrors[detail.GetReason()]
		}
	}
	if sentinel == nil {
		switch st.Code() {
		case codes.Canceled:
			sentinel = context.Canceled
		case codes.DeadlineExceeded:
			sentinel = context.DeadlineExceeded
		case codes.Unavailable:
			sentinel = ErrClosed
		case codes.FailedPrecondition:
			sentinel = ErrNotSession
		case codes.ResourceExhausted:
			if path == "" {
				sentinel = ErrTooManyExecs
			}
		}
	}
	if sentinel == nil {
		sentinel = errors.New(st.Message())
	}
	if path == "" && op == "exec" {
		return fmt.Errorf("sandbox: exec: %w (%s)", sentinel, st.Message())
	}
	return &FileError{Op: op, Path: path, Err: sentinel, Detail: st.Message()}
}
