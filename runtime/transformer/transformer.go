package transformer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/execfarm/execfarm/runtime/transform"
)

// Kind selects the transform a helper runs.
type Kind byte

const (
	// Goja is transform.TypeScript: goja-runnable JavaScript.
	Goja Kind = 1
	// Node is node.Transform: the node prelude's program.
	Node Kind = 2
)

func (k Kind) String() string {
	switch k {
	case Goja:
		return "goja"
	case Node:
		return "node"
	}
	return "kind " + strconv.Itoa(int(k))
}

// The bounds of a helper and of the pool. The host memory the transforms
// can take is Helpers × MemoryLimit (1 GiB) at the very worst. Measured:
// 1.5 MB of ordinary TypeScript (whose program, ~4 MB with its source
// map, is about the most the worker takes) transforms in ~1 s; 4 MB of
// enums or of `{using a=b;}` passes MemoryLimit.
const (
	// Helpers is how many transforms run at once, each in its own helper.
	Helpers = 2
	// MaxStack bounds a helper's goroutine stacks, bytes
	// (debug.SetMaxStack): ~28 000 levels of esbuild's parser, two orders
	// of magnitude past what people write or generate.
	MaxStack = 128 << 20
	// MemoryLimit is a helper's RLIMIT_DATA, bytes: the Go heap and stacks
	// live in private writable mappings, which it counts.
	MemoryLimit = 512 << 20
	// A transform's CPU time (the helper's user and system time over all
	// its threads, from the request read to the answer) is bounded by
	// CPUTimeBase plus CPUTimePerKiB for each KiB of code, MaxCPUTime at
	// most: esbuild's parse of nested TypeScript generics is quadratic
	// (90 KB of `a<(` would take a helper for minutes), while 1.5 MB of
	// ordinary code, ~1 s of work, gets 17 s. CPU time, not wall-clock
	// time: on a loaded host a helper waits for a CPU, which is the host's
	// doing, not the code's. The helper checks its own CPU time every
	// cpuPoll (serve.go) and ends itself past the bound.
	CPUTimeBase   = 2 * time.Second
	CPUTimePerKiB = 10 * time.Millisecond
	MaxCPUTime    = 20 * time.Second
	// Timeout is the wall-clock backstop of one transform, start of a
	// helper included, whatever the code's size: a helper starved of CPU
	// (or stuck) cannot hold a request longer. It is past MaxCPUTime, so
	// that on an idle host code passes its CPU bound first; a transform
	// that reaches Timeout within its CPU bound is ErrStarved, retryable,
	// never the code's LimitError.
	Timeout = 30 * time.Second
	// PerOwner is how many helpers one owner (WithOwner) uses at once,
	// so that another always finds one: a principal sending slow code
	// waits behind its own requests only.
	PerOwner = Helpers - 1
	// MaxQueuedBytes bounds the code of the transforms waiting for a
	// helper or running, bytes: past it a request is refused (ErrBusy)
	// instead of holding its code in the supervisor while it waits.
	// MaxOwnerQueuedBytes bounds one owner's part of it, so that one
	// owner's waiting requests cannot take the queue from the others.
	MaxQueuedBytes      = 32 << 20
	MaxOwnerQueuedBytes = MaxQueuedBytes / 4
	// MaxOutput bounds a transformed program, bytes. The worker takes
	// less (runtime/program.MaxRequestBytes); this bounds what the
	// supervisor reads from a helper.
	MaxOutput = 8 << 20
	// MaxInput bounds the code sent to a helper, bytes: past every API's
	// own bound (4 MiB gRPC messages, 3 MiB of MCP code).
	MaxInput = 8 << 20
)

// Env is the variable that makes a process a helper; its value is the
// helper's bounds, "stack,memory,cpu,timeout": bytes, bytes, and
// milliseconds of MaxCPUTime and of Timeout.
const Env = "EXECFARM_TRANSFORM_HELPER"

// ErrHelper is wrapped by the errors of a helper that are not the code's
// doing: it could not start, or died without passing a bound.
var ErrHelper = errors.New("transform helper failed")

// errStale is a helper found dead when a request was to be written: it
// died while idle, of nothing the request did.
var errStale = errors.New("idle helper gone")

// ErrBusy is returned when the code waiting for a helper or being
// transformed is at MaxQueuedBytes: the request may be retried.
var ErrBusy = errors.New("transform helpers busy")

// ErrStarved is wrapped by the error of a transform that reached the
// wall-clock backstop (Timeout) within its CPU time bound: the helper
// waited for a CPU (a loaded host) or was stopped, which is not the
// code's doing; the request may be retried.
var ErrStarved = errors.New("transform helper starved of CPU")

// ownerKey is the context key of WithOwner.
type ownerKey struct{}

// WithOwner returns ctx naming the owner of the transforms made with it
// (a principal's key): one owner uses at most PerOwner helpers at once.
// Transforms without an owner share the owner "".
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// cpuFor is the CPU time a helper gets for n bytes of code, max at most.
func cpuFor(n int, max time.Duration) time.Duration {
	return min(CPUTimeBase+time.Duration(n>>10)*CPUTimePerKiB, max)
}

// LimitError is returned for code whose transform passed a helper's bound:
// stack (nesting too deep), memory, CPU time or output size.
type LimitError struct {
	// Bound is "stack", "memory", "cpu" or "output".
	Bound string
	// Limit is the bound: bytes, or for "cpu" a time.Duration.
	Limit int64
	// Size is the output's size in bytes, for "output".
	Size int64
}

func (e *LimitError) Error() string {
	switch e.Bound {
	case "stack":
		return fmt.Sprintf("code nests too deeply to transform: the parser passed its stack of %d MiB", e.Limit>>20)
	case "memory":
		return fmt.Sprintf("transforming the code took more than %d MiB of memory", e.Limit>>20)
	case "cpu":
		return fmt.Sprintf("transforming the code took more than %v of CPU time", time.Duration(e.Limit))
	case "output":
		return fmt.Sprintf("the transformed program is %d bytes; at most %d", e.Size, e.Limit)
	}
	return "transform limit " + e.Bound
}

// Statuses of a helper's answer.
const (
	statusOK     byte = 0 // the program
	statusSyntax byte = 1 // a transform.SyntaxError, framed by encodeSyntax
	statusOutput byte = 2 // output over MaxOutput: its size, 8 bytes
	statusError  byte = 3 // another error's message
)

// cacheEntries, cacheMaxCode and cacheMaxOutput bound the cache of
// transform results: at most 512 entries of code up to 32 KiB whose output
// is at most 64 KiB (lowering can blow code up 20-40 times: `using`,
// decorators, enums), so 48 MiB at worst; typical scripts are far
// smaller. A transform costs ~1 ms even for one line, on the latency path
// of every request, and agents run the same script again and again.
const (
	cacheEntries   = 512
	cacheMaxCode   = 32 << 10
	cacheMaxOutput = 64 << 10
)

type cacheKey struct {
	kind Kind
	code string
}

// bounds are a helper's: MaxStack, MemoryLimit, MaxCPUTime (the most of
// cpuFor) and Timeout (wall-clock) but in tests.
type bounds struct {
	stack, memory int64
	cpu, timeout  time.Duration
}

var std = newPool(Helpers, bounds{stack: MaxStack, memory: MemoryLimit, cpu: MaxCPUTime, timeout: Timeout})

// pool holds the idle helpers and bounds how many work at once.
type pool struct {
	bounds
	slots    chan struct{} // a token per transform running
	perOwner int
	mu       sync.Mutex
	idle     []*helper
	owners   map[string]*ownerSlots // of the owners with a transform waiting or running
	queued   int64                  // bytes of code waiting or running
	maxQueue int64
	// maxOwnerQueue bounds one owner's queued bytes.
	maxOwnerQueue int64
	cache         *lru.Cache[cacheKey, string]
}

// ownerSlots is one owner's share of the helpers.
type ownerSlots struct {
	sem    chan struct{}
	refs   int
	queued int64 // bytes of its code waiting or running
}

func newPool(n int, b bounds) *pool {
	c, err := lru.New[cacheKey, string](cacheEntries)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return &pool{bounds: b, slots: make(chan struct{}, n), perOwner: max(1, n-1), owners: map[string]*ownerSlots{},
		maxQueue: MaxQueuedBytes, maxOwnerQueue: MaxOwnerQueuedBytes, cache: c}
}

// admit counts code as queued and returns its owner's share, or ErrBusy.
// Call the returned release once done.
func (p *pool) admit(owner string, n int) (*ownerSlots, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	o := p.owners[owner]
	var mine int64
	if o != nil {
		mine = o.queued
	}
	switch {
	case mine+int64(n) > p.maxOwnerQueue:
		return nil, nil, fmt.Errorf("%w: %d bytes of this caller's code wait for or are in a transform; at most %d", ErrBusy, mine, p.maxOwnerQueue)
	case p.queued+int64(n) > p.maxQueue:
		return nil, nil, fmt.Errorf("%w: %d bytes of code wait for or are in a transform; at most %d", ErrBusy, p.queued, p.maxQueue)
	}
	if o == nil {
		o = &ownerSlots{sem: make(chan struct{}, p.perOwner)}
		p.owners[owner] = o
	}
	p.queued += int64(n)
	o.queued += int64(n)
	o.refs++
	return o, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.queued -= int64(n)
		o.queued -= int64(n)
		if o.refs--; o.refs == 0 {
			delete(p.owners, owner)
		}
	}, nil
}

// Transform returns code transformed for kind, from the cache or from a
// helper; it waits for a free helper while ctx allows. Errors:
// transform.ErrEmptyCode for empty code; a *transform.SyntaxError for code
// esbuild cannot parse; a *LimitError for code past a helper's bounds;
// ctx's error (wrapped) when ctx ended first; ErrBusy (wrapped) when
// MaxQueuedBytes of code wait; ErrStarved (wrapped) when the transform
// reached Timeout within its CPU time; an error wrapping ErrHelper
// otherwise.
func Transform(ctx context.Context, kind Kind, code string) (string, error) {
	return std.transform(ctx, kind, code)
}

func (p *pool) transform(ctx context.Context, kind Kind, code string) (string, error) {
	if code == "" {
		return "", transform.ErrEmptyCode
	}
	if len(code) > MaxInput {
		return "", fmt.Errorf("%w: code is %d bytes; a helper takes at most %d", ErrHelper, len(code), MaxInput)
	}
	key := cacheKey{kind, code}
	if js, ok := p.cache.Get(key); ok {
		return js, nil
	}
	owner, _ := ctx.Value(ownerKey{}).(string)
	share, release, err := p.admit(owner, len(code))
	if err != nil {
		return "", err
	}
	defer release()
	select {
	case share.sem <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("wait for a transform helper: %w", ctx.Err())
	}
	defer func() { <-share.sem }()
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("wait for a transform helper: %w", ctx.Err())
	}
	defer func() { <-p.slots }()
	h := p.take()
	if h == nil {
		var err error
		if h, err = p.start(); err != nil {
			return "", err
		}
	}
	js, err, broken := h.do(ctx, p.bounds, kind, code)
	if broken && errors.Is(err, errStale) {
		// An idle helper that died meanwhile (killed by someone else):
		// not this code's doing; once more on a new one.
		if h, err = p.start(); err != nil {
			return "", err
		}
		js, err, broken = h.do(ctx, p.bounds, kind, code)
	}
	if broken {
		return "", err
	}
	p.put(h)
	if err == nil && len(code) <= cacheMaxCode && len(js) <= cacheMaxOutput {
		p.cache.Add(key, js)
	}
	return js, err
}

func (p *pool) take() *helper {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		h := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return h
	}
	return nil
}

func (p *pool) put(h *helper) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idle = append(p.idle, h)
}

// ProcessFDs returns the descriptors the idle helpers hold (their pipes
// and pidfds): a process keeps them for its life once it transformed, as
// leakcheck.IgnoreFDs expects.
func ProcessFDs() []int {
	std.mu.Lock()
	defer std.mu.Unlock()
	var out []int
	for _, h := range std.idle {
		out = append(out, int(h.in.Fd()), int(h.out.Fd()), int(h.stderr.Fd()))
		out = append(out, pidFDs(h.cmd.Process.Pid)...)
	}
	return out
}

// helper is one helper process and the supervisor's ends of its pipes.
type helper struct {
	cmd    *exec.Cmd
	in     *os.File // its standard input
	out    *os.File // its standard output
	stderr *os.File // its standard error, read once it died
}

// start starts a helper: the running binary, with Env set to its bounds.
func (p *pool) start() (*helper, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHelper, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("%w: %v", ErrHelper, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("%w: %v", ErrHelper, err)
	}
	cmd := &exec.Cmd{
		Path:   "/proc/self/exe",
		Args:   []string{"execfarm-transform"},
		Env:    []string{fmt.Sprintf("%s=%d,%d,%d,%d", Env, p.stack, p.memory, p.cpu.Milliseconds(), p.timeout.Milliseconds()), "GOTRACEBACK=none"},
		Stdin:  inR,
		Stdout: outW,
		Stderr: errW,
	}
	err = cmd.Start()
	closeAll(inR, outW, errW)
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, fmt.Errorf("%w: start: %v", ErrHelper, err)
	}
	return &helper{cmd: cmd, in: inW, out: outR, stderr: errR}, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// do sends one request and reads its answer. broken reports that the
// helper was killed (err says why) and must not be used again. The
// helper bounds its CPU time (cpuFor) itself; do bounds the wall-clock
// time by b.timeout, the backstop.
func (h *helper) do(ctx context.Context, b bounds, kind Kind, code string) (js string, err error, broken bool) {
	b.cpu = cpuFor(len(code), b.cpu)
	deadline := time.Now().Add(b.timeout)
	_ = h.in.SetWriteDeadline(deadline)
	_ = h.out.SetReadDeadline(deadline)
	cut := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = h.in.SetWriteDeadline(time.Unix(1, 0))
		_ = h.out.SetReadDeadline(time.Unix(1, 0))
		close(cut)
	})
	defer func() {
		// A cut that started is over before the helper can serve another
		// request, which sets deadlines of its own.
		if !stop() {
			<-cut
		}
	}()
	status, payload, err := h.roundTrip(kind, code)
	if err != nil {
		return "", h.fail(ctx, b, err), true
	}
	switch status {
	case statusOK:
		return string(payload), nil, false
	case statusSyntax:
		se, err := decodeSyntax(payload)
		if err != nil {
			return "", h.fail(ctx, b, err), true
		}
		return "", se, false
	case statusOutput:
		if len(payload) != 8 {
			return "", h.fail(ctx, b, errors.New("malformed answer")), true
		}
		return "", &LimitError{Bound: "output", Limit: MaxOutput, Size: int64(binary.LittleEndian.Uint64(payload))}, false
	case statusError:
		return "", errors.New(string(payload)), false
	}
	return "", h.fail(ctx, b, fmt.Errorf("unknown answer status %d", status)), true
}

func (h *helper) roundTrip(kind Kind, code string) (byte, []byte, error) {
	var hdr [5]byte
	binary.LittleEndian.PutUint32(hdr[:4], uint32(len(code)))
	hdr[4] = byte(kind)
	if _, err := h.in.Write(hdr[:]); err != nil {
		if errors.Is(err, syscall.EPIPE) {
			err = fmt.Errorf("%w: %v", errStale, err)
		}
		return 0, nil, err
	}
	if _, err := io.WriteString(h.in, code); err != nil {
		return 0, nil, err
	}
	if _, err := io.ReadFull(h.out, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[:4])
	if n > MaxOutput {
		return 0, nil, fmt.Errorf("answer of %d bytes, over %d", n, MaxOutput)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(h.out, payload); err != nil {
		return 0, nil, err
	}
	return hdr[4], payload, nil
}

// fail kills the helper, reaps it and says why the request failed: ctx's
// end, a bound the code passed (read from the helper's last words on
// standard error, or its exit status), ErrStarved past the wall-clock
// backstop, or ErrHelper.
func (h *helper) fail(ctx context.Context, b bounds, cause error) error {
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
	_ = h.stderr.SetReadDeadline(time.Now().Add(time.Second))
	last, _ := io.ReadAll(io.LimitReader(h.stderr, 16<<10))
	closeAll(h.in, h.out, h.stderr)
	words := string(last)
	// It died on its own, during this request, when its pipe ended
	// before the kill above.
	died := errors.Is(cause, io.EOF) || errors.Is(cause, io.ErrUnexpectedEOF) || errors.Is(cause, syscall.EPIPE)
	switch {
	case errors.Is(cause, errStale):
		return cause // the caller retries on a new helper
	case ctx.Err() != nil:
		return fmt.Errorf("transform: %w", ctx.Err())
	case strings.Contains(words, "stack exceeds"), strings.Contains(words, "stack overflow"):
		return &LimitError{Bound: "stack", Limit: b.stack}
	case strings.Contains(words, "out of memory"), strings.Contains(words, "cannot allocate memory"):
		return &LimitError{Bound: "memory", Limit: b.memory}
	case h.cmd.ProcessState.ExitCode() == exitCPU:
		// It ended itself past its CPU time, perhaps as the wall-clock
		// backstop came: the CPU bound decides.
		return &LimitError{Bound: "cpu", Limit: int64(b.cpu)}
	case errors.Is(cause, os.ErrDeadlineExceeded):
		// Alive at the backstop: within its CPU time (or past it by
		// less than the cpuPoll it had no CPU to make), so it waited for
		// a CPU, or was stopped.
		return fmt.Errorf("%w: no answer in %v of wall-clock time, within the code's %v of CPU time: the host is loaded; retry", ErrStarved, b.timeout, b.cpu)
	case died && h.signaled() && h.peakRSS() >= b.memory/2:
		// Go's runtime fails in more ways than one when mmap does (a
		// fault inside its collector, too): a helper that died of a
		// signal, big, died of its memory. (Its peak is its life's: a
		// helper that lived on after a big transform gave the memory
		// back, but not the peak, so only a death counts.)
		return &LimitError{Bound: "memory", Limit: b.memory}
	}
	if w := strings.TrimSpace(words); w != "" {
		return fmt.Errorf("%w: %v (%s)", ErrHelper, cause, lastLine(w))
	}
	return fmt.Errorf("%w: %v", ErrHelper, cause)
}

// signaled reports whether the reaped helper ended by a signal (a fault,
// or a kill not ours) or a runtime crash (exit status 2), not a clean exit.
func (h *helper) signaled() bool {
	ws, ok := h.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && (ws.Signaled() || ws.ExitStatus() == 2)
}

// peakRSS is the reaped helper's peak resident set, bytes.
func (h *helper) peakRSS() int64 {
	if ru, ok := h.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10 // KiB on Linux
	}
	return 0
}

// lastLine is the last line of s, for an error message.
func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
