package client

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/execfarm/execfarm/proto/execfarmv1"
)

// ChunkSize is the size of the chunks Files sends, bytes: a file moves in
// chunks of at most this, never whole in memory (Write of a []byte
// excepted, which holds what it was given).
const ChunkSize = 256 << 10

// Files are a sandbox's file operations. Paths are absolute or relative
// to /workspace.
type Files struct{ s *Sandbox }

// Files returns the sandbox's file operations.
func (s *Sandbox) Files() Files { return Files{s} }

// Write writes data to path (mode 0644), creating parent directories.
func (f Files) Write(ctx context.Context, path string, data []byte) error {
	_, err := f.WriteFrom(ctx, path, bytes.NewReader(data), 0)
	return err
}

// WriteFrom writes what r holds to path in chunks of ChunkSize, with mode
// (0 = 0644), and returns the bytes written. A file that does not fit in
// the workspace is a *ResourceExhaustedError (WORKSPACE_FULL) and leaves
// nothing behind, as does a read error of r (returned as it is).
func (f Files) WriteFrom(ctx context.Context, path string, r io.Reader, mode uint32) (int64, error) {
	c := f.s.c
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a call not closed by CloseAndRecv is abandoned: no file is left
	st, err := c.sess.UploadFile(ctx)
	if err != nil {
		return 0, c.wrap(err)
	}
	if err := st.Send(&execfarmv1.UploadFileRequest{Part: &execfarmv1.UploadFileRequest_Header{
		Header: &execfarmv1.UploadFileHeader{SandboxId: f.s.id, Path: path, Mode: mode}}}); err != nil {
		_, err = st.CloseAndRecv() // the server ended the call: its status says why
		return 0, c.wrap(err)
	}
	buf := make([]byte, ChunkSize)
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if err := st.Send(&execfarmv1.UploadFileRequest{Part: &execfarmv1.UploadFileRequest_Data{Data: buf[:n]}}); err != nil {
				_, err = st.CloseAndRecv()
				return 0, c.wrap(err)
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return 0, rerr
		}
	}
	resp, err := st.CloseAndRecv()
	if err != nil {
		return 0, c.wrap(err)
	}
	return resp.GetBytesWritten(), nil
}

// Read returns the whole of path's content. For a file of any size use
// ReadTo, which holds one chunk at a time.
func (f Files) Read(ctx context.Context, path string) ([]byte, error) {
	var b bytes.Buffer
	if _, _, err := f.ReadTo(ctx, path, &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ReadTo copies path's content to w chunk by chunk and returns its
// metadata and the bytes copied. A write error of w is returned as it is
// (and ends the download).
func (f Files) ReadTo(ctx context.Context, path string, w io.Writer) (*execfarmv1.FileInfo, int64, error) {
	c := f.s.c
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := c.sess.DownloadFile(ctx, &execfarmv1.DownloadFileRequest{SandboxId: f.s.id, Path: path})
	if err != nil {
		return nil, 0, c.wrap(err)
	}
	var info *execfarmv1.FileInfo
	var n int64
	for {
		msg, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return info, n, nil
		}
		if err != nil {
			return info, n, c.wrap(err)
		}
		switch p := msg.GetPart().(type) {
		case *execfarmv1.DownloadFileResponse_Info:
			info = p.Info
		case *execfarmv1.DownloadFileResponse_Data:
			m, werr := w.Write(p.Data)
			n += int64(m)
			if werr != nil {
				return info, n, werr
			}
		}
	}
}

// Stat describes path; exists is false (and info nil) when it does not
// exist. Symlinks are not followed.
func (f Files) Stat(ctx context.Context, path string) (info *execfarmv1.FileInfo, exists bool, err error) {
	resp, err := f.s.c.sess.StatFile(ctx, &execfarmv1.StatFileRequest{SandboxId: f.s.id, Path: path})
	return resp.GetInfo(), resp.GetExists(), f.s.c.wrap(err)
}

// List lists the directory path (at most 1000 entries; the response's
// Truncated says there were more).
func (f Files) List(ctx context.Context, path string) (*execfarmv1.ListFilesResponse, error) {
	resp, err := f.s.c.sess.ListFiles(ctx, &execfarmv1.ListFilesRequest{SandboxId: f.s.id, Path: path})
	return resp, f.s.c.wrap(err)
}

// Remove removes a file, a symlink or an empty directory; with recursive,
// a directory with everything in it.
func (f Files) Remove(ctx context.Context, path string, recursive bool) error {
	_, err := f.s.c.sess.RemoveFile(ctx, &execfarmv1.RemoveFileRequest{SandboxId: f.s.id, Path: path, Recursive: recursive})
	return f.s.c.wrap(err)
}

// Mkdir creates the directory path (mode 0755); with parents, also its
// missing parents, and an existing directory is no error (mkdir -p).
func (f Files) Mkdir(ctx context.Context, path string, parents bool) error {
	_, err := f.s.c.sess.MakeDirectory(ctx, &execfarmv1.MakeDirectoryRequest{SandboxId: f.s.id, Path: path, Parents: parents})
	return f.s.c.wrap(err)
}
