package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/execfarm/execfarm/proto/execfarmv1"
)

// uploadChunk is the size of an upload's data messages (the server takes
// up to 1 MiB).
const uploadChunk = 256 << 10

// progressFrom is the smallest transfer that gets a progress bar, and
// only when stderr is a terminal.
const progressFrom = 4 << 20

// remotePath is one side of a cp: a sandbox's path (SANDBOX:PATH) or a
// local one (sandbox "").
type remotePath struct {
	sandbox, path string
}

// parseCopyArg reads SANDBOX:PATH, or a local path. A colon makes a
// sandbox path only when what comes before it is a possible sandbox id
// (no '/', not empty), so ./a:b and /tmp/a:b stay local; "-" is stdin or
// stdout.
func parseCopyArg(s string) remotePath {
	if i := strings.IndexByte(s, ':'); i > 0 && !strings.Contains(s[:i], "/") {
		return remotePath{sandbox: s[:i], path: s[i+1:]}
	}
	return remotePath{path: s}
}

func cpCmd(cf *clientFlags) *cobra.Command {
	var mode uint32
	cmd := &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy a file into or out of a session sandbox (SANDBOX:PATH)",
		Long: `Copy one file into a session sandbox (execfarm cp FILE SANDBOX:PATH) or out
of one (execfarm cp SANDBOX:PATH FILE). A sandbox path is absolute or
relative to /workspace; parent directories are created in the sandbox.
"-" is standard input or output. A local destination that is a directory
gets the file under its own name; a download is written to a temporary
file beside the destination and renamed once complete. On a terminal, a
transfer of 4 MiB or more shows a progress bar on stderr.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, dst := parseCopyArg(args[0]), parseCopyArg(args[1])
			switch {
			case src.sandbox != "" && dst.sandbox != "":
				return errors.New("copy between two sandboxes: copy out to a local file, then in")
			case src.sandbox == "" && dst.sandbox == "":
				return errors.New("neither side is a sandbox path (SANDBOX:PATH)")
			}
			return cf.sessionCall(func(c sessionClients) error {
				if dst.sandbox != "" {
					return upload(cmd.Context(), c.sessions, src.path, dst, mode)
				}
				return download(cmd.Context(), c.sessions, src, dst.path)
			})
		},
	}
	cmd.Flags().Uint32Var(&mode, "mode", 0, "permission bits of an uploaded file, octal as 0755 (default: the local file's)")
	return cmd
}

// progress returns a writer that counts bytes on a progress bar drawn on
// tty for a transfer of size bytes (-1: unknown), or io.Discard when tty
// is no terminal or the transfer is small; done ends the bar.
func progress(tty *os.File, size int64, what string) (w io.Writer, done func()) {
	if !term.IsTerminal(int(tty.Fd())) || (size >= 0 && size < progressFrom) {
		return io.Discard, func() {}
	}
	bar := progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(tty),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish(),
	)
	return bar, func() { _ = bar.Finish() }
}

// upload streams the local file local ("-" = stdin) to dst.
func upload(ctx context.Context, c execfarmv1.SessionServiceClient, local string, dst remotePath, mode uint32) error {
	in, size := io.Reader(os.Stdin), int64(-1)
	if local != "-" {
		f, err := os.Open(local)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", local)
		}
		in, size = f, fi.Size()
		if mode == 0 {
			mode = uint32(fi.Mode().Perm())
		}
	}
	if dst.path == "" || strings.HasSuffix(dst.path, "/") {
		if local == "-" {
			return errors.New("a copy from standard input needs a file name in the sandbox")
		}
		dst.path += filepath.Base(local)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := c.UploadFile(ctx)
	if err != nil {
		return err
	}
	if err := st.Send(&execfarmv1.UploadFileRequest{Part: &execfarmv1.UploadFileRequest_Header{Header: &execfarmv1.UploadFileHeader{
		SandboxId: dst.sandbox, Path: dst.path, Mode: mode}}}); err != nil {
		_, err = st.CloseAndRecv()
		return err
	}
	bar, done := progress(os.Stderr, size, "upload")
	defer done()
	buf := make([]byte, uploadChunk)
	for {
		n, rerr := io.ReadFull(in, buf)
		if n > 0 {
			if err := st.Send(&execfarmv1.UploadFileRequest{Part: &execfarmv1.UploadFileRequest_Data{Data: buf[:n]}}); err != nil {
				// The server ended the call: its status says why.
				_, err = st.CloseAndRecv()
				return err
			}
			_, _ = bar.Write(buf[:n])
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return rerr // cancel ends the call: no file is left in the sandbox
		}
	}
	resp, err := st.CloseAndRecv()
	if err != nil {
		return err
	}
	if size >= 0 && resp.GetBytesWritten() != size {
		return fmt.Errorf("%s changed while copied: %d bytes written of %d", local, resp.GetBytesWritten(), size)
	}
	return nil
}

// download streams src's file to the local path local ("-" = stdout).
func download(ctx context.Context, c execfarmv1.SessionServiceClient, src remotePath, local string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := c.DownloadFile(ctx, &execfarmv1.DownloadFileRequest{SandboxId: src.sandbox, Path: src.path})
	if err != nil {
		return err
	}
	first, err := st.Recv()
	if err != nil {
		return err
	}
	info := first.GetInfo()
	if info == nil {
		return errors.New("the download did not start with the file's information")
	}
	out, commit, abort, err := downloadTarget(local, info)
	if err != nil {
		return err
	}
	defer abort()
	bar, done := progress(os.Stderr, info.GetSize(), "download")
	defer done()
	var n int64
	for {
		msg, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		d := msg.GetData()
		if _, err := out.Write(d); err != nil {
			return err
		}
		_, _ = bar.Write(d)
		n += int64(len(d))
	}
	if n != info.GetSize() {
		return fmt.Errorf("%s:%s changed while copied: %d bytes of %d", src.sandbox, src.path, n, info.GetSize())
	}
	return commit()
}

// downloadTarget opens where a download goes: stdout for "-"; else a
// temporary file beside local (inside it when it is a directory) that
// commit renames into place and abort removes.
func downloadTarget(local string, info *execfarmv1.FileInfo) (w io.Writer, commit func() error, abort func(), err error) {
	if local == "-" {
		return os.Stdout, func() error { return nil }, func() {}, nil
	}
	if fi, err := os.Stat(local); err == nil && fi.IsDir() {
		local = filepath.Join(local, info.GetName())
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(local), "."+filepath.Base(local)+".execfarm-*")
	if err != nil {
		return nil, nil, nil, err
	}
	committed := false
	commit = func() error {
		if err := tmp.Chmod(fs.FileMode(info.GetMode() & 0o777)); err != nil {
			return err
		}
		if err := tmp.Close(); err != nil {
			return err
		}
		if err := os.Rename(tmp.Name(), local); err != nil {
			return err
		}
		committed = true
		return nil
	}
	abort = func() {
		if !committed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}
	return tmp, commit, abort, nil
}

func lsCmd(cf *clientFlags) *cobra.Command {
	maxEntries := countFlag{want: "a whole number from 1 to 10000 (0: the default, 1000)"}
	cmd := &cobra.Command{
		Use:   "ls SANDBOX [PATH]",
		Short: "List a directory of a session sandbox (default /workspace)",
		Long: `List a directory of a session sandbox: mode, size, modification time and
name of each entry, sorted by name, symlinks with their target (never
followed). At most --max-entries are shown, and at most 3 MiB of them
(the server's bound on one response); when the directory holds more,
stderr says how many and what cut the listing. A name or target that is
not UTF-8 is shown with U+FFFD for each run of its invalid bytes, and
stderr says so.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "."
			if len(args) == 2 {
				path = args[1]
			}
			return cf.sessionCall(func(c sessionClients) error {
				resp, err := c.sessions.ListFiles(cmd.Context(), &execfarmv1.ListFilesRequest{SandboxId: args[0], Path: path, MaxEntries: maxEntries.n})
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(os.Stdout, 0, 4, 1, ' ', tabwriter.AlignRight)
				notUTF8 := 0
				for _, e := range resp.GetEntries() {
					if e.GetNotUtf8() {
						notUTF8++
					}
					name := e.GetName()
					if t := e.GetLinkTarget(); t != "" {
						name += " -> " + t
					}
					fmt.Fprintf(w, "%s\t%d\t %s\t %s\n", modeText(e), e.GetSize(),
						time.UnixMilli(e.GetModTimeMs()).Format("2006-01-02 15:04"), name)
				}
				if err := w.Flush(); err != nil {
					return err
				}
				if notUTF8 > 0 {
					fmt.Fprintf(os.Stderr, "execfarm: %d names or link targets are not UTF-8; shown with U+FFFD, they are not the real ones\n", notUTF8)
				}
				if resp.GetTruncated() {
					fmt.Fprintf(os.Stderr, "execfarm: %s holds %d entries; %d shown (%s)\n", resp.GetPath(), resp.GetTotalEntries(), len(resp.GetEntries()), listCut(maxEntries.n, len(resp.GetEntries())))
				}
				return nil
			})
		},
	}
	cmd.Flags().Var(&maxEntries, "max-entries", "show at most this many entries, at most 10000 (default 1000)")
	return cmd
}

// listCut names what cut a truncated listing of shown entries asked
// for with --max-entries max: the flag when it shows that many, else the
// server's bound on a response's bytes.
func listCut(max int32, shown int) string {
	if max == 0 {
		max = 1000
	}
	if shown >= int(max) {
		return "--max-entries"
	}
	return "the server's 3 MiB bound on one response"
}

// modeText renders a file's type and permission bits as ls -l does:
// "-rw-r--r--", "drwxrwxrwt", "lrwxrwxrwx", "-rwsr-xr-x".
func modeText(e *execfarmv1.FileInfo) string {
	b := []byte("?rwxrwxrwx")
	switch e.GetType() {
	case execfarmv1.FileType_FILE_TYPE_FILE:
		b[0] = '-'
	case execfarmv1.FileType_FILE_TYPE_DIRECTORY:
		b[0] = 'd'
	case execfarmv1.FileType_FILE_TYPE_SYMLINK:
		b[0] = 'l'
	}
	m := e.GetMode()
	for i := range 9 {
		if m&(1<<(8-i)) == 0 {
			b[1+i] = '-'
		}
	}
	// setuid, setgid, sticky take the x of user, group, other.
	for _, sp := range []struct {
		bit  uint32
		pos  int
		x, n byte
	}{{0o4000, 3, 's', 'S'}, {0o2000, 6, 's', 'S'}, {0o1000, 9, 't', 'T'}} {
		if m&sp.bit != 0 {
			if b[sp.pos] == 'x' {
				b[sp.pos] = sp.x
			} else {
				b[sp.pos] = sp.n
			}
		}
	}
	return string(b)
}
