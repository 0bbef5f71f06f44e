package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/isolation/rootfs"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/worker/plugin"
)

// Bounds of the file calls (proto/PROTOCOL.md).
const (
	// maxUploadChunk is the largest UploadRequest.data accepted.
	maxUploadChunk = 1 << 20
	// downloadChunk is the size of a DownloadResponse.data (the last may
	// be shorter).
	downloadChunk = 64 << 10
	// defaultListEntries and maxListEntries bound ListRequest.max_entries;
	// listPage is how many entries one ListResponse carries.
	defaultListEntries = 1000
	maxListEntries     = 10000
	listPage           = 1000
)

// fileError is err of op on path as a gRPC status whose code says what
// the caller did wrong (or the sandbox lacks), with a workerv1.ErrorDetail
// naming the errno: the supervisor maps the reason, never the message. A
// status error passes unchanged.
func fileError(op, path string, err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return status.Errorf(codes.Internal, "%s %s: %v", op, path, err)
	}
	code := codes.Internal
	switch errno {
	case unix.ENOENT:
		code = codes.NotFound
	case unix.EEXIST:
		code = codes.AlreadyExists
	case unix.EACCES, unix.EPERM, unix.EROFS, unix.ELOOP:
		// ELOOP: a magic link (/proc/PID/fd, /proc/PID/root) refused by
		// RESOLVE_NO_MAGICLINKS, or a symbolic link loop.
		code = codes.PermissionDenied
	case unix.ENOSPC, unix.EDQUOT, unix.EFBIG, unix.EMFILE, unix.ENFILE, unix.ENOMEM:
		code = codes.ResourceExhausted
	case unix.ENOTDIR, unix.EISDIR, unix.ENOTEMPTY, unix.EBUSY, unix.EXDEV, unix.ETXTBSY:
		code = codes.FailedPrecondition
	case unix.ENAMETOOLONG, unix.EINVAL:
		code = codes.InvalidArgument
	}
	return withReason(status.New(code, fmt.Sprintf("%s %s: %v", op, path, err)), unix.ErrnoName(errno))
}

// withReason attaches the ErrorInfo detail to st.
func withReason(st *status.Status, reason string) error {
	if d, err := st.WithDetails(&workerv1.ErrorDetail{Reason: reason}); err == nil {
		st = d
	}
	return st.Err()
}

// sandboxPath checks p (rootfs.SandboxPath) and returns its clean form.
func sandboxPath(p string) (string, error) {
	abs, err := rootfs.SandboxPath(p)
	if err != nil {
		return "", withReason(status.New(codes.InvalidArgument, err.Error()), plugin.ReasonInvalidPath)
	}
	return abs, nil
}

// notRoot refuses the root itself where a call needs a name in a directory.
func notRoot(op, abs string) error {
	if abs == "/" {
		return withReason(status.Newf(codes.InvalidArgument, "%s: the sandbox's root is not a file", op), plugin.ReasonInvalidPath)
	}
	return nil
}

// Upload writes a file of the sandbox (see the proto): parents created,
// bytes written to a hidden temporary file in the target's directory,
// renamed over the target at the end; on any failure the temporary file
// is removed.
func (s *server) Upload(stream workerv1.Worker_UploadServer) error {
	if !s.session {
		return errNotSession
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	h := first.GetHeader()
	if h == nil {
		return status.Error(codes.InvalidArgument, "the first message of an Upload must be its header")
	}
	abs, err := sandboxPath(h.GetPath())
	if err != nil {
		return err
	}
	if err := notRoot("upload", abs); err != nil {
		return err
	}
	mode := h.GetMode() & 0o777
	if mode == 0 {
		mode = 0o644
	}
	parent, base := split(abs)
	dir, tmp := -1, -1
	tmpName := tempName(base)
	err = s.files.do(func(root int) error {
		var err error
		if dir, err = mkdirAll(root, parent, 0o755); err != nil {
			return fileError("create the directories of", abs, err)
		}
		if tmp, err = unix.Openat(dir, tmpName, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600); err != nil {
			unix.Close(dir)
			return fileError("create", abs, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	f := os.NewFile(uintptr(tmp), tmpName)
	defer f.Close()
	done := false
	defer func() {
		if !done {
			_ = s.files.do(func(int) error { return unix.Unlinkat(dir, tmpName, 0) })
		}
	}()
	var n int64
	for {
		in, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		data, ok := in.GetPart().(*workerv1.UploadRequest_Data)
		if !ok || len(data.Data) > maxUploadChunk {
			return status.Errorf(codes.InvalidArgument, "an Upload's messages after its header are data of at most %d bytes", maxUploadChunk)
		}
		if _, err := f.Write(data.Data); err != nil {
			return fileError("write", abs, err)
		}
		n += int64(len(data.Data))
	}
	err = s.files.do(func(int) error {
		if err := unix.Fchmod(tmp, mode); err != nil {
			return fileError("chmod", abs, err)
		}
		if err := unix.Renameat(dir, tmpName, dir, base); err != nil {
			return fileError("rename into", abs, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	done = true
	return stream.SendAndClose(&workerv1.UploadResponse{Bytes: n})
}

// Download streams a regular file of the sandbox: its FileInfo, then its
// bytes. A final symbolic link is followed, inside the root.
func (s *server) Download(req *workerv1.DownloadRequest, stream workerv1.Worker_DownloadServer) error {
	if !s.session {
		return errNotSession
	}
	abs, err := sandboxPath(req.GetPath())
	if err != nil {
		return err
	}
	fd := -1
	var st unix.Stat_t
	err = s.files.do(func(root int) error {
		var err error
		// O_NONBLOCK: opening a FIFO must not wait for a writer.
		if fd, err = openInRoot(root, relative(abs), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0); err != nil {
			return fileError("open", abs, err)
		}
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return fileError("stat", abs, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
		case unix.S_IFDIR:
			unix.Close(fd)
			return fileError("download", abs, unix.EISDIR)
		default:
			unix.Close(fd)
			return withReason(status.Newf(codes.FailedPrecondition, "download %s: not a regular file", abs), plugin.ReasonNotRegular)
		}
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
		}
		return nil
	})
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), abs)
	defer f.Close()
	_, base := split(abs)
	if err := stream.Send(&workerv1.DownloadResponse{Part: &workerv1.DownloadResponse_Info{Info: info(base, &st)}}); err != nil {
		return err
	}
	for {
		buf := make([]byte, downloadChunk)
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			if err := stream.Send(&workerv1.DownloadResponse{Part: &workerv1.DownloadResponse_Data{Data: buf[:n]}}); err != nil {
				return err
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return fileError("read", abs, err)
		}
	}
}

// List lists a directory of the sandbox (see listDir), in pages: at most
// max_entries entries and plugin.MaxListBytes of their paths and link
// targets.
func (s *server) List(req *workerv1.ListRequest, stream workerv1.Worker_ListServer) error {
	if !s.session {
		return errNotSession
	}
	limit := int(req.GetMaxEntries())
	switch {
	case limit == 0:
		limit = defaultListEntries
	case limit < 0 || limit > maxListEntries:
		return status.Errorf(codes.InvalidArgument, "max_entries %d: at most %d", limit, maxListEntries)
	}
	abs, err := sandboxPath(req.GetPath())
	if err != nil {
		return err
	}
	var entries []*workerv1.FileInfo
	var total int64
	var cut bool
	err = s.files.do(func(root int) error {
		dir, err := openInRoot(root, relative(abs), unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return fileError("open", abs, err)
		}
		defer unix.Close(dir)
		// Counted with the request's path, as the supervisor counts.
		if entries, total, cut, err = listDir(dir, limit, len(req.GetPath())+1, plugin.MaxListBytes); err != nil {
			return fileError("list", abs, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for len(entries) > listPage {
		if err := stream.Send(&workerv1.ListResponse{Entries: entries[:listPage]}); err != nil {
			return err
		}
		entries = entries[listPage:]
	}
	return stream.Send(&workerv1.ListResponse{Entries: entries, TotalEntries: total, Truncated: cut || total > int64(limit), Done: true})
}

// Stat describes a path of the sandbox without following a final link; a
// missing path (or one through a non-directory) is exists false.
func (s *server) Stat(_ context.Context, req *workerv1.StatRequest) (*workerv1.StatResponse, error) {
	if !s.session {
		return nil, errNotSession
	}
	abs, err := sandboxPath(req.GetPath())
	if err != nil {
		return nil, err
	}
	var resp workerv1.StatResponse
	err = s.files.do(func(root int) error {
		if abs == "/" {
			var st unix.Stat_t
			if err := unix.Fstat(root, &st); err != nil {
				return fileError("stat", abs, err)
			}
			resp.Exists, resp.Info = true, info("/", &st)
			return nil
		}
		dir, base, err := openParent(root, abs)
		if err == unix.ENOENT || err == unix.ENOTDIR {
			return nil
		}
		if err != nil {
			return fileError("stat", abs, err)
		}
		defer unix.Close(dir)
		fi, err := statAt(dir, base)
		if err == unix.ENOENT || err == unix.ENOTDIR {
			return nil
		}
		if err != nil {
			return fileError("stat", abs, err)
		}
		resp.Exists, resp.Info = true, fi
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// Remove removes a file, link or empty directory of the sandbox, or with
// recursive a whole tree (removeTree). A final link is removed, never
// followed.
func (s *server) Remove(_ context.Context, req *workerv1.RemoveRequest) (*workerv1.RemoveResponse, error) {
	if !s.session {
		return nil, errNotSession
	}
	abs, err := sandboxPath(req.GetPath())
	if err != nil {
		return nil, err
	}
	if err := notRoot("remove", abs); err != nil {
		return nil, err
	}
	err = s.files.do(func(root int) error {
		dir, base, err := openParent(root, abs)
		if err != nil {
			return fileError("remove", abs, err)
		}
		defer unix.Close(dir)
		var st unix.Stat_t
		if err := unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fileError("remove", abs, err)
		}
		switch {
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			err = unix.Unlinkat(dir, base, 0)
		case req.GetRecursive():
			err = removeTree(dir, base)
		default:
			err = unix.Unlinkat(dir, base, unix.AT_REMOVEDIR)
		}
		if err != nil {
			return fileError("remove", abs, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &workerv1.RemoveResponse{}, nil
}

// Mkdir creates a directory of the sandbox with exactly mode (the umask
// does not apply to it; parents it creates get 0755 less the umask).
// With parents, missing parents are created and an existing directory is
// no error.
func (s *server) Mkdir(_ context.Context, req *workerv1.MkdirRequest) (*workerv1.MkdirResponse, error) {
	if !s.session {
		return nil, errNotSession
	}
	abs, err := sandboxPath(req.GetPath())
	if err != nil {
		return nil, err
	}
	mode := req.GetMode() & 0o777
	if mode == 0 {
		mode = 0o755
	}
	if abs == "/" {
		if req.GetParents() {
			return &workerv1.MkdirResponse{}, nil
		}
		return nil, fileError("mkdir", abs, unix.EEXIST)
	}
	err = s.files.do(func(root int) error {
		parent, base := split(abs)
		var dir int
		var err error
		if req.GetParents() {
			dir, err = mkdirAll(root, parent, 0o755)
		} else {
			dir, err = openInRoot(root, parent, unix.O_PATH|unix.O_DIRECTORY, 0)
		}
		if err != nil {
			return fileError("mkdir", abs, err)
		}
		defer unix.Close(dir)
		err = unix.Mkdirat(dir, base, mode)
		if err == unix.EEXIST && req.GetParents() {
			var st unix.Stat_t
			if serr := unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				return nil
			}
		}
		if err != nil {
			return fileError("mkdir", abs, err)
		}
		fd, err := openBeneath(dir, base, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			return fileError("mkdir", abs, err)
		}
		defer unix.Close(fd)
		if err := unix.Fchmod(fd, mode); err != nil {
			return fileError("chmod", abs, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &workerv1.MkdirResponse{}, nil
}

// Move renames a path of the sandbox to another (renameat2, relative to
// each one's parent opened in the root): a final link of either is the
// link itself, never followed. Without overwrite an existing destination
// is EEXIST (RENAME_NOREPLACE), never replaced.
func (s *server) Move(_ context.Context, req *workerv1.MoveRequest) (*workerv1.MoveResponse, error) {
	if !s.session {
		return nil, errNotSession
	}
	src, err := sandboxPath(req.GetSource())
	if err != nil {
		return nil, err
	}
	dst, err := sandboxPath(req.GetDestination())
	if err != nil {
		return nil, err
	}
	if err := notRoot("move", src); err != nil {
		return nil, err
	}
	if err := notRoot("move", dst); err != nil {
		return nil, err
	}
	var flags uint
	if !req.GetOverwrite() {
		flags = unix.RENAME_NOREPLACE
	}
	what := src + " to " + dst
	err = s.files.do(func(root int) error {
		sdir, sbase, err := openParent(root, src)
		if err != nil {
			return fileError("move", what, err)
		}
		defer unix.Close(sdir)
		ddir, dbase, err := openParent(root, dst)
		if err != nil {
			return fileError("move", what, err)
		}
		defer unix.Close(ddir)
		if err := unix.Renameat2(sdir, sbase, ddir, dbase, flags); err != nil {
			return fileError("move", what, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &workerv1.MoveResponse{}, nil
}
