package worker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/isolation/namespace"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/worker/plugin"
)

// These tests run a session worker in the test process itself, outside any
// sandbox, over a gRPC connection on a unix socket: its file calls resolve
// in a temporary directory standing for the sandbox's root, next to the
// host's real tree, so that a link planted there that the worker followed
// out of its root would reach real host files. They need root (the file
// thread's setfsuid, runtime processes as uid 1000). One server serves
// every test: the worker reaps all children of its process, and two
// reapers would take each other's.

var testServer testWorker

type testWorker struct {
	once   sync.Once
	root   string
	client workerv1.WorkerClient
	err    error

	srv  *server
	grpc *grpc.Server
	conn *grpc.ClientConn
}

// stop stops the gRPC server and client and removes the root; the
// worker's own threads live on (a worker never ends them).
func (ts *testWorker) stop() {
	if ts.conn != nil {
		ts.conn.Close()
	}
	if ts.grpc != nil {
		ts.grpc.Stop()
	}
	if ts.root != "" {
		os.RemoveAll(ts.root)
	}
}

// lifelongFDs are the worker's descriptors that live as long as it: the
// file thread's root.
func (ts *testWorker) lifelongFDs() []int {
	if ts.srv == nil || ts.srv.files.root <= 0 {
		return nil
	}
	return []int{ts.srv.files.root}
}

// sessionWorker returns a client of the test process's session worker and
// its root directory (holding /workspace owned by the sandbox user and
// /etc/passwd owned by root).
func sessionWorker(t *testing.T) (workerv1.WorkerClient, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ts := &testServer
	ts.once.Do(func() { ts.err = ts.start() })
	if ts.err != nil {
		t.Fatal(ts.err)
	}
	return ts.client, ts.root
}

// start makes the root and serves a session worker in this process for
// the rest of its life (TestMain ignores its goroutines).
func (ts *testWorker) start() error {
	root, err := os.MkdirTemp("", "worker-root-")
	if err != nil {
		return err
	}
	ts.root = root
	ws := filepath.Join(root, "workspace")
	for _, d := range []string{ws, filepath.Join(root, "etc")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(root, 0o755); err != nil {
		return err
	}
	if err := os.Chown(ws, namespace.SandboxUID, namespace.SandboxUID); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "passwd"), []byte("in-root passwd\n"), 0o644); err != nil {
		return err
	}
	s := newServer()
	s.session = true
	s.files.rootDir = root
	if err := s.forker.start(nil, false); err != nil {
		return err
	}
	go s.reap(notifyChildren())
	lis, err := net.Listen("unix", filepath.Join(root, "worker.sock"))
	if err != nil {
		return err
	}
	ts.srv = s
	ts.grpc = grpc.NewServer()
	workerv1.RegisterWorkerServer(ts.grpc, s)
	go func() { _ = ts.grpc.Serve(lis) }()
	if ts.conn, err = grpc.NewClient("unix://"+lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		return err
	}
	ts.client = workerv1.NewWorkerClient(ts.conn)
	return nil
}

func code(err error) codes.Code { return status.Code(err) }

// reason is the worker's ErrorDetail reason of err ("" if none).
func reason(err error) string {
	st, _ := status.FromError(err)
	for _, d := range st.Details() {
		if detail, ok := d.(*workerv1.ErrorDetail); ok {
			return detail.GetReason()
		}
	}
	return ""
}

func download(c workerv1.WorkerClient, path string) ([]byte, error) {
	stream, err := c.Download(context.Background(), &workerv1.DownloadRequest{Path: path})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return b.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
		b.Write(msg.GetData())
	}
}

func upload(c workerv1.WorkerClient, path string, data []byte) error {
	stream, err := c.Upload(context.Background())
	if err != nil {
		return err
	}
	if err := stream.Send(&workerv1.UploadRequest{Part: &workerv1.UploadRequest_Header{Header: &workerv1.UploadHeader{Path: path}}}); err != nil {
		_, err = stream.CloseAndRecv()
		return err
	}
	if err := stream.Send(&workerv1.UploadRequest{Part: &workerv1.UploadRequest_Data{Data: data}}); err != nil {
		_, err = stream.CloseAndRecv()
		return err
	}
	_, err = stream.CloseAndRecv()
	return err
}

// TestFileCallsResolveInTheirRoot plants links to host paths in the
// worker's root: every call resolves them inside the root (openat2
// RESOLVE_IN_ROOT), none reads or writes the host's file of that name.
func TestFileCallsResolveInTheirRoot(t *testing.T) {
	c, root := sessionWorker(t)
	ws := filepath.Join(root, "workspace")
	// The root is the test process's: what the test makes goes with it,
	// so that the test runs again (-count).
	t.Cleanup(func() {
		for _, name := range []string{"up", "p", "tmpl", "dots", "mine"} {
			_ = os.RemoveAll(filepath.Join(ws, name))
		}
	})
	for name, target := range map[string]string{"up": "/", "p": "/etc/passwd", "tmpl": "/tmp", "dots": "../../../../../../etc/passwd"} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	hostPasswd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"up/etc/passwd", "p", "dots", "/workspace/up/workspace/up/etc/passwd"} {
		got, err := download(c, p)
		if err != nil || string(got) != "in-root passwd\n" {
			t.Errorf("download %s: %q, %v; want the root's passwd", p, got, err)
		}
	}
	if _, err := download(c, "up/etc/shadow"); code(err) != codes.NotFound {
		t.Errorf("download up/etc/shadow: %v, want NOT_FOUND", err)
	}
	// Writes as the sandbox user, inside the root: the root's /etc is
	// root's, so refused; a dangling link is no directory to create in;
	// nothing appears on the host.
	unique := "worker-test-" + filepath.Base(root)
	for p, want := range map[string]codes.Code{"up/etc/" + unique: codes.PermissionDenied, "tmpl/" + unique: codes.FailedPrecondition} {
		if err := upload(c, p, []byte("x")); code(err) != want {
			t.Errorf("upload %s: %v, want %v", p, err, want)
		}
	}
	for _, p := range []string{"/etc/" + unique, "/tmp/" + unique, filepath.Join(root, "tmp")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists", p)
		}
	}
	if after, _ := os.ReadFile("/etc/passwd"); !bytes.Equal(after, hostPasswd) {
		t.Fatal("the host's /etc/passwd changed")
	}
	// A new file belongs to the sandbox user.
	if err := upload(c, "mine/f", []byte("mine")); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(ws, "mine", "f"), &st); err != nil || st.Uid != namespace.SandboxUID || st.Gid != namespace.SandboxUID {
		t.Errorf("uploaded file: uid %d gid %d, %v", st.Uid, st.Gid, err)
	}
	for _, p := range []string{"../../x", "/..", "a\x00b"} {
		_, err := c.Stat(context.Background(), &workerv1.StatRequest{Path: p})
		if code(err) != codes.InvalidArgument || reason(err) != plugin.ReasonInvalidPath {
			t.Errorf("stat %q: %v, want INVALID_ARGUMENT %s", p, err, plugin.ReasonInvalidPath)
		}
	}
}

// TestListNamesNotUTF8 lists a directory holding a name and a link
// target that are not UTF-8: the listing (and Stat) marshals, with each
// run of invalid bytes as one U+FFFD and not_utf8 set on those entries
// only.
func TestListNamesNotUTF8(t *testing.T) {
	c, root := sessionWorker(t)
	dir := filepath.Join(root, "workspace", "notutf8")
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // the test runs again (-count)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad\xff\xfe."), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("t\xfex", filepath.Join(dir, "lnk")); err != nil {
		t.Fatal(err)
	}
	stream, err := c.List(context.Background(), &workerv1.ListRequest{Path: "notutf8"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		msg, err := stream.Recv()
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		for _, fi := range msg.GetEntries() {
			got = append(got, fmt.Sprintf("%s>%s:%v", fi.GetName(), fi.GetSymlinkTarget(), fi.GetNotUtf8()))
		}
		if msg.GetDone() {
			break
		}
	}
	want := []string{"bad\uFFFD.>:true", "lnk>t\uFFFDx:true", "ok>:false"}
	if !slices.Equal(got, want) {
		t.Errorf("list: %q, want %q", got, want)
	}
	st, err := c.Stat(context.Background(), &workerv1.StatRequest{Path: "notutf8/lnk"})
	if err != nil || st.GetInfo().GetSymlinkTarget() != "t\uFFFDx" || !st.GetInfo().GetNotUtf8() {
		t.Errorf("stat notutf8/lnk: %v, %v; want target t\uFFFDx, not_utf8", st, err)
	}
}

// startExec starts an exec of sh -c cmd in the root's workspace, which is
// the test's host directory: the process runs on the host, as uid 1000.
func startExec(t *testing.T, c workerv1.WorkerClient, ctx context.Context, cmd string, stdinOpen bool) (workerv1.Worker_ExecClient, error) {
	t.Helper()
	_, root := sessionWorker(t)
	stream, err := c.Exec(ctx)
	if err != nil {
		return nil, err
	}
	req := &workerv1.RunRequest{Argv: []string{"/bin/sh", "-c", cmd}, Dir: filepath.Join(root, "workspace"), Env: []string{"PATH=/usr/bin:/bin"}}
	if err := stream.Send(&workerv1.ExecInput{Input: &workerv1.ExecInput_Start{Start: &workerv1.ExecStart{Request: req, StdinOpen: stdinOpen}}}); err != nil {
		return nil, err
	}
	ev, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	if ev.GetStarted() == nil {
		t.Fatalf("first event %v, want started", ev)
	}
	return stream, nil
}

// drain reads an exec's events to its Exit.
func drain(stream workerv1.Worker_ExecClient) (string, *workerv1.Exit, error) {
	var out bytes.Buffer
	for {
		ev, err := stream.Recv()
		if err != nil {
			return out.String(), nil, err
		}
		out.Write(ev.GetStdout())
		if x := ev.GetExit(); x != nil {
			return out.String(), x, nil
		}
	}
}

func TestExecBoundStdinAndSignals(t *testing.T) {
	c, _ := sessionWorker(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var streams []workerv1.Worker_ExecClient
	for range plugin.MaxConcurrentExecs {
		s, err := startExec(t, c, ctx, `read l; echo "got $l"`, true)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, s)
	}
	if _, err := startExec(t, c, ctx, "true", false); code(err) != codes.ResourceExhausted {
		t.Fatalf("exec %d: %v, want RESOURCE_EXHAUSTED", plugin.MaxConcurrentExecs+1, err)
	}
	for i, s := range streams {
		switch i % 3 {
		case 0: // stdin, then end of file
			_ = s.Send(&workerv1.ExecInput{Input: &workerv1.ExecInput_Stdin{Stdin: []byte("line\n")}})
			_ = s.Send(&workerv1.ExecInput{Input: &workerv1.ExecInput_CloseStdin{CloseStdin: true}})
		case 1: // SIGTERM to the process group
			_ = s.Send(&workerv1.ExecInput{Input: &workerv1.ExecInput_Signal{Signal: 15}})
		case 2: // end of file at once
			_ = s.Send(&workerv1.ExecInput{Input: &workerv1.ExecInput_CloseStdin{CloseStdin: true}})
		}
		out, exit, err := drain(s)
		if err != nil {
			t.Fatalf("exec %d: %v", i, err)
		}
		switch i % 3 {
		case 0:
			if out != "got line\n" || exit.GetExitCode() != 0 {
				t.Errorf("exec %d: %q %v", i, out, exit)
			}
		case 1:
			if exit.GetSignal() != 15 {
				t.Errorf("exec %d after SIGTERM: %v", i, exit)
			}
		case 2:
			if out != "got \n" || exit.GetExitCode() != 0 {
				t.Errorf("exec %d: %q %v", i, out, exit)
			}
		}
	}
	// Cancelling the call kills the exec's process group.
	cctx, ccancel := context.WithCancel(ctx)
	s, err := startExec(t, c, cctx, `sleep 987654 & wait`, false)
	if err != nil {
		t.Fatal(err)
	}
	ccancel()
	if _, _, err := drain(s); code(err) != codes.Canceled {
		t.Errorf("after cancel: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ps, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		alive := false
		for _, p := range ps {
			b, _ := os.ReadFile(p)
			if strings.HasPrefix(string(b), "sleep\x00987654") {
				alive = true
			}
		}
		if !alive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancelled exec's sleep 987654 is still running")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestExecTarget: an exec's files place its process as the supervisor
// sent them (plugin.SandboxConfig.ExecCgroupFD): born in the exec's
// cgroup, and its cpuacct one when cpuacct is apart, with the forking
// thread's way back to the payload and the sandbox's cpuacct cgroup; or
// moved into each; any other count is refused.
func TestExecTarget(t *testing.T) {
	f := func(name string) *os.File {
		fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		file := os.NewFile(uintptr(fd), name)
		t.Cleanup(func() { file.Close() })
		return file
	}
	payload, x, xcpu, back := f("payload/tasks"), f("x1/tasks"), f("cpuacct x1/tasks"), f("cpuacct/tasks")
	names := func(fs []*os.File) string {
		var s []string
		for _, f := range fs {
			s = append(s, f.Name())
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		name              string
		files             []*os.File
		born              bool
		join, back, procs string
		wantErr           bool
	}{
		{name: "v1, one hierarchy", files: []*os.File{x}, born: true, join: "x1/tasks", back: "payload/tasks"},
		{name: "v1, cpuacct apart", files: []*os.File{x, xcpu, back}, born: true,
			join: "x1/tasks,cpuacct x1/tasks", back: "payload/tasks,cpuacct/tasks"},
		{name: "moved", files: []*os.File{x, xcpu}, procs: "x1/tasks,cpuacct x1/tasks"},
		{name: "two for a born process", files: []*os.File{x, xcpu}, born: true, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := execTarget(tc.files, tc.born, payload)
			if tc.wantErr {
				if status.Code(err) != codes.InvalidArgument {
					t.Fatalf("execTarget = %+v, %v; want INVALID_ARGUMENT", got, err)
				}
				return
			}
			if err != nil || names(got.join) != tc.join || names(got.back) != tc.back || names(got.procs) != tc.procs {
				t.Fatalf("execTarget = join %q back %q procs %q, %v; want %q %q %q",
					names(got.join), names(got.back), names(got.procs), err, tc.join, tc.back, tc.procs)
			}
		})
	}
}

// TestExecStartInAMissingDir: an exec whose working directory is gone at
// its start (removed by the sandbox's own processes after the supervisor
// checked it) ends with a start error that names the directory and says
// so (Exit.start_dir), keeping its errno; a missing program in a present
// directory does not.
func TestExecStartInAMissingDir(t *testing.T) {
	c, root := sessionWorker(t)
	gone := filepath.Join(root, "workspace", "gone")
	for _, tt := range []struct {
		name, dir, program string
		atDir              bool
	}{
		{"missing directory", gone, "/bin/sh", true},
		{"file as directory", filepath.Join(root, "etc", "passwd"), "/bin/sh", true},
		{"missing program", filepath.Join(root, "workspace"), "/no/such/program", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stream, err := c.Exec(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			req := &workerv1.RunRequest{Argv: []string{tt.program, "-c", "true"}, Dir: tt.dir, Env: []string{"PATH=/usr/bin:/bin"}}
			if err := stream.Send(&workerv1.ExecInput{Input: &workerv1.ExecInput_Start{Start: &workerv1.ExecStart{Request: req}}}); err != nil {
				t.Fatal(err)
			}
			_, exit, err := drain(stream)
			if err != nil {
				t.Fatal(err)
			}
			if exit.GetStartError() == "" || exit.GetStartDir() != tt.atDir || exit.GetStartErrno() == 0 {
				t.Fatalf("exit %v, want a start error with start_dir %v and its errno", exit, tt.atDir)
			}
			if named := strings.Contains(exit.GetStartError(), "working directory "+tt.dir); named != tt.atDir {
				t.Errorf("start error %q names the directory: %v, want %v", exit.GetStartError(), named, tt.atDir)
			}
		})
	}
}

// TestMove renames inside the root: a link is moved as the link (its
// host target untouched), an existing destination is EEXIST unless
// overwrite, a missing source ENOENT, a move out through a planted link
// stays in the root, and the root itself is refused.
func TestMove(t *testing.T) {
	c, root := sessionWorker(t)
	ws := filepath.Join(root, "workspace")
	t.Cleanup(func() {
		for _, name := range []string{"mv-a", "mv-b", "mv-c", "mv-link", "mv-link2", "mv-up", "mv-dir", "mv-dir2"} {
			_ = os.RemoveAll(filepath.Join(ws, name))
		}
	})
	ctx := context.Background()
	move := func(src, dst string, overwrite bool) error {
		_, err := c.Move(ctx, &workerv1.MoveRequest{Source: src, Destination: dst, Overwrite: overwrite})
		return err
	}
	for name, data := range map[string]string{"mv-a": "a", "mv-b": "b"} {
		if err := upload(c, name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := move("mv-a", "mv-c", false); err != nil {
		t.Fatalf("move to a new name: %v", err)
	}
	if got, err := download(c, "mv-c"); err != nil || string(got) != "a" {
		t.Errorf("moved file: %q, %v", got, err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "mv-a")); !os.IsNotExist(err) {
		t.Errorf("source still there: %v", err)
	}
	if err := move("mv-c", "/workspace/mv-b", false); code(err) != codes.AlreadyExists || reason(err) != "EEXIST" {
		t.Errorf("move over an existing file: %v, want ALREADY_EXISTS EEXIST", err)
	}
	if got, _ := download(c, "mv-b"); string(got) != "b" {
		t.Errorf("destination changed without overwrite: %q", got)
	}
	if err := move("mv-c", "mv-b", true); err != nil {
		t.Fatalf("move with overwrite: %v", err)
	}
	if got, _ := download(c, "mv-b"); string(got) != "a" {
		t.Errorf("overwritten destination: %q", got)
	}
	if err := move("mv-a", "mv-x", false); code(err) != codes.NotFound || reason(err) != "ENOENT" {
		t.Errorf("move of a missing source: %v, want NOT_FOUND ENOENT", err)
	}
	// A link moves as itself.
	if err := os.Symlink("/etc/passwd", filepath.Join(ws, "mv-link")); err != nil {
		t.Fatal(err)
	}
	if err := move("mv-link", "mv-link2", false); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(ws, "mv-link2")); err != nil || target != "/etc/passwd" {
		t.Errorf("moved link: %q, %v", target, err)
	}
	// Through a link to "/", a destination resolves in the root: the file
	// lands in the root's /etc (the sandbox user may not write there),
	// never the host's.
	if err := os.Symlink("/", filepath.Join(ws, "mv-up")); err != nil {
		t.Fatal(err)
	}
	unique := "worker-mv-" + filepath.Base(root)
	if err := move("mv-b", "mv-up/etc/"+unique, false); code(err) != codes.PermissionDenied {
		t.Errorf("move into the root's /etc: %v, want PERMISSION_DENIED", err)
	}
	if _, err := os.Lstat("/etc/" + unique); err == nil {
		t.Errorf("/etc/%s exists on the host", unique)
	}
	// A directory, into a non-empty directory only with nothing there.
	if err := os.MkdirAll(filepath.Join(ws, "mv-dir", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(ws, "mv-dir"), namespace.SandboxUID, namespace.SandboxUID); err != nil {
		t.Fatal(err)
	}
	if err := move("mv-dir", "mv-dir2", false); err != nil {
		t.Fatalf("move a directory: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(ws, "mv-dir2", "sub")); err != nil || !fi.IsDir() {
		t.Errorf("moved directory: %v", err)
	}
	for _, p := range [][2]string{{"/", "mv-x"}, {"mv-b", "/"}, {"mv-b", "../../x"}} {
		if err := move(p[0], p[1], true); code(err) != codes.InvalidArgument || reason(err) != plugin.ReasonInvalidPath {
			t.Errorf("move %q to %q: %v, want INVALID_ARGUMENT %s", p[0], p[1], err, plugin.ReasonInvalidPath)
		}
	}
}
