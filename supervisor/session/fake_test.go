package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/workerv1"
	"github.com/execfarm/execfarm/supervisor/sandbox"
)

// fakeBackend starts fakeBoxes.
type fakeBackend struct {
	mu       sync.Mutex
	n        int
	boxes    []*fakeBox
	startErr error
	// started, if set, receives every box as it starts.
	started chan *fakeBox
}

func (b *fakeBackend) Start(ctx context.Context, spec sandbox.Spec) (Box, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.startErr != nil {
		return nil, b.startErr
	}
	b.n++
	x := &fakeBox{workerDone: make(chan struct{}), id: fmt.Sprintf("sb-%016x", b.n), uid: uint32(1<<30 + b.n*65536), spec: spec,
		files: map[string][]byte{}, dirs: map[string]bool{"/": true, "/workspace": true}, running: map[string]context.CancelFunc{},
		workspaceBytes: spec.WorkspaceBytes}
	b.boxes = append(b.boxes, x)
	if b.started != nil {
		b.started <- x
	}
	return x, nil
}

// open returns the boxes not yet closed.
func (b *fakeBackend) open() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, x := range b.boxes {
		if !x.isClosed() {
			out = append(out, x.id)
		}
	}
	return out
}

// fakeBox is a sandbox in memory. Its "programs" (the shell runtime's
// command line, argv[2]) are one word and arguments:
//
//	echo TEXT...        TEXT and a newline on stdout
//	warn TEXT...        TEXT and a newline on stderr
//	write PATH TEXT...  TEXT into PATH (relative to the workdir)
//	cat PATH            PATH's content on stdout
//	stdin               standard input copied to stdout until EOF
//	block               runs until killed
//	exit N              exit status N
//
// Any other argv (an exec's argv) prints itself, %q-quoted.
type fakeBox struct {
	id   string
	uid  uint32
	spec sandbox.Spec

	mu             sync.Mutex
	files          map[string][]byte
	dirs           map[string]bool
	running        map[string]context.CancelFunc // exec id -> kill
	workspaceBytes int64
	killed, closed bool
	signals        []string
	workerDone     chan struct{}
}

func (b *fakeBox) ID() string      { return b.id }
func (b *fakeBox) HostUID() uint32 { return b.uid }

func (b *fakeBox) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

func (b *fakeBox) RunExec(ctx context.Context, id string, req *workerv1.RunRequest, stdin io.Reader, onEvent func(*workerv1.RunEvent)) (*workerv1.Exit, CPUTime, error) {
	exit, err := b.runExec(ctx, id, req, stdin, onEvent)
	return exit, CPUTime{UserMicros: 42}, err
}

func (b *fakeBox) ExecCPU(id string) (CPUTime, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.running[id]
	return CPUTime{}, ok, nil
}

func (b *fakeBox) runExec(ctx context.Context, id string, req *workerv1.RunRequest, stdin io.Reader, onEvent func(*workerv1.RunEvent)) (*workerv1.Exit, error) {
	ctx, kill := context.WithCancel(ctx)
	defer kill()
	b.mu.Lock()
	if b.killed {
		b.mu.Unlock()
		return nil, errors.New("fake: sandbox killed")
	}
	b.running[id] = kill
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.running, id)
		b.mu.Unlock()
	}()
	out := func(s string) { onEvent(&workerv1.RunEvent{Event: &workerv1.RunEvent_Stdout{Stdout: []byte(s)}}) }
	if a := req.GetArgv(); len(a) != 3 || a[0] != "/bin/sh" {
		// Not a shell command line (an exec's argv): the argv itself.
		out(fmt.Sprintf("%q", a))
		return &workerv1.Exit{}, nil
	}
	f := strings.Fields(req.GetArgv()[2])
	arg := func(i int) string { return strings.Join(f[i:], " ") }
	switch f[0] {
	case "echo":
		out(arg(1) + "\n")
	case "warn":
		onEvent(&workerv1.RunEvent{Event: &workerv1.RunEvent_Stderr{Stderr: []byte(arg(1) + "\n")}})
	case "write":
		b.mu.Lock()
		b.files[path.Join(req.GetDir(), f[1])] = []byte(arg(2))
		b.mu.Unlock()
	case "cat":
		b.mu.Lock()
		c, ok := b.files[path.Join(req.GetDir(), f[1])]
		b.mu.Unlock()
		if !ok {
			return &workerv1.Exit{ExitCode: 1}, nil
		}
		out(string(c))
	case "stdin":
		if stdin == nil {
			return &workerv1.Exit{ExitCode: 2}, nil
		}
		buf := make([]byte, 4096)
		for {
			n, err := stdin.Read(buf)
			if n > 0 {
				out(string(buf[:n]))
			}
			if err != nil {
				break
			}
		}
	case "block":
		<-ctx.Done()
		return nil, ctx.Err()
	case "exit":
		n, _ := strconv.Atoi(f[1])
		return &workerv1.Exit{ExitCode: int32(n)}, nil
	}
	return &workerv1.Exit{}, nil
}

func (b *fakeBox) Signal(id string, sig syscall.Signal) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.running[id]; !ok {
		return ErrExecNotRunning
	}
	b.signals = append(b.signals, id+" "+sig.String())
	return nil
}

func (b *fakeBox) KillExec(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k, ok := b.running[id]; ok {
		k()
	}
	return nil
}

func (b *fakeBox) used() int64 {
	var n int64
	for _, c := range b.files {
		n += int64(len(c))
	}
	return n
}

func (b *fakeBox) Upload(ctx context.Context, p string, mode uint32, r io.Reader) (int64, error) {
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, r); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errors.New("fake: closed")
	}
	if b.used()+int64(buf.Len()) > b.workspaceBytes {
		return 0, &fs.PathError{Op: "write", Path: p, Err: syscall.ENOSPC}
	}
	for d := path.Dir(p); !b.dirs[d]; d = path.Dir(d) {
		b.dirs[d] = true
	}
	b.files[p] = buf.Bytes()
	return int64(buf.Len()), nil
}

func (b *fakeBox) Download(ctx context.Context, p string) (FileInfo, io.ReadCloser, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.files[p]
	if !ok {
		return FileInfo{}, nil, &fs.PathError{Op: "open", Path: p, Err: syscall.ENOENT}
	}
	return FileInfo{Name: path.Base(p), Path: p, Size: int64(len(c)), Type: TypeFile, Mode: 0o644},
		io.NopCloser(bytes.NewReader(c)), nil
}

func (b *fakeBox) List(ctx context.Context, dir string, max int) ([]FileInfo, int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.files[dir]; ok {
		return nil, 0, &fs.PathError{Op: "open", Path: dir, Err: syscall.ENOTDIR}
	}
	if !b.dirs[dir] {
		return nil, 0, &fs.PathError{Op: "open", Path: dir, Err: syscall.ENOENT}
	}
	var all []FileInfo
	for p, c := range b.files {
		if path.Dir(p) == dir {
			all = append(all, FileInfo{Name: path.Base(p), Path: p, Size: int64(len(c)), Type: TypeFile})
		}
	}
	for p := range b.dirs {
		if p != dir && path.Dir(p) == dir {
			all = append(all, FileInfo{Name: path.Base(p), Path: p, Type: TypeDirectory})
		}
	}
	slices.SortFunc(all, func(a, c FileInfo) int { return strings.Compare(a.Name, c.Name) })
	return all[:min(max, len(all))], int64(len(all)), nil
}

func (b *fakeBox) Stat(ctx context.Context, p string) (FileInfo, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.files[p]; ok {
		return FileInfo{Name: path.Base(p), Path: p, Size: int64(len(c)), Type: TypeFile}, true, nil
	}
	if b.dirs[p] {
		return FileInfo{Name: path.Base(p), Path: p, Type: TypeDirectory}, true, nil
	}
	return FileInfo{}, false, nil
}

func (b *fakeBox) Remove(ctx context.Context, p string, recursive bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.files[p]; ok {
		delete(b.files, p)
		return nil
	}
	if !b.dirs[p] {
		return &fs.PathError{Op: "remove", Path: p, Err: syscall.ENOENT}
	}
	delete(b.dirs, p)
	return nil
}

func (b *fakeBox) Mkdir(ctx context.Context, p string, mode uint32, parents bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dirs[p] && !parents {
		return &fs.PathError{Op: "mkdir", Path: p, Err: syscall.EEXIST}
	}
	b.dirs[p] = true
	return nil
}

// Move moves a file, or a directory with what is below it.
func (b *fakeBox) Move(ctx context.Context, src, dst string, overwrite bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, isFile := b.files[src]
	switch {
	case !isFile && !b.dirs[src], !b.dirs[path.Dir(dst)]:
		return &fs.PathError{Op: "rename", Path: src, Err: syscall.ENOENT}
	case !overwrite && (b.dirs[dst] || b.files[dst] != nil):
		return &fs.PathError{Op: "rename", Path: dst, Err: syscall.EEXIST}
	}
	if isFile {
		b.files[dst] = b.files[src]
		delete(b.files, src)
		return nil
	}
	for p, c := range b.files {
		if strings.HasPrefix(p, src+"/") {
			b.files[dst+p[len(src):]] = c
			delete(b.files, p)
		}
	}
	for p := range b.dirs {
		if p == src || strings.HasPrefix(p, src+"/") {
			b.dirs[dst+p[len(src):]] = true
			delete(b.dirs, p)
		}
	}
	return nil
}

func (b *fakeBox) Usage() (cgroup.Usage, error) {
	return cgroup.Usage{CPUUserMicros: 42, PeakMemoryBytes: 1 << 20, PeakMemorySource: "fake"}, nil
}
func (b *fakeBox) Sample() {}
func (b *fakeBox) ServeBroker(func(*grpc.Server), ...grpc.ServerOption) (uint32, error) {
	return 0, nil
}
func (b *fakeBox) Exited() bool {
	select {
	case <-b.workerDone:
		return true
	default:
		return false
	}
}

func (b *fakeBox) WorkerDone() <-chan struct{} { return b.workerDone }

// loseWorker is the worker's death on its own (an OOM kill).
func (b *fakeBox) loseWorker() { close(b.workerDone) }

func (b *fakeBox) Kill() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.killed = true
	for _, k := range b.running {
		k()
	}
	return nil
}

func (b *fakeBox) Close() error {
	_ = b.Kill()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

// waitFor polls cond (a state of the system under test, never a sleep in
// the hope that something happened) until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}
