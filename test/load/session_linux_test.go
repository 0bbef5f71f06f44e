package load

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/test/hostscan"
)

// sessions is a SessionService client of s.
func (s *server) sessions() execfarmv1.SessionServiceClient {
	return execfarmv1.NewSessionServiceClient(s.conn)
}

// upload streams size bytes of r into path of sandbox id in 1 MiB
// messages (the largest the server takes).
func upload(ctx context.Context, c execfarmv1.SessionServiceClient, id, path string, r io.Reader) (int64, error) {
	st, err := c.UploadFile(ctx)
	if err != nil {
		return 0, err
	}
	if err := st.Send(&execfarmv1.UploadFileRequest{Part: &execfarmv1.UploadFileRequest_Header{
		Header: &execfarmv1.UploadFileHeader{SandboxId: id, Path: path}}}); err != nil {
		return 0, err
	}
	buf := make([]byte, 1<<20)
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if err := st.Send(&execfarmv1.UploadFileRequest{Part: &execfarmv1.UploadFileRequest_Data{Data: buf[:n]}}); err != nil {
				_, err = st.CloseAndRecv() // the server's reason
				return 0, err
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
	return resp.GetBytesWritten(), err
}

// download streams path of sandbox id into w and returns the size its
// FileInfo announced and the bytes received.
func download(ctx context.Context, c execfarmv1.SessionServiceClient, id, path string, w io.Writer) (announced, got int64, err error) {
	st, err := c.DownloadFile(ctx, &execfarmv1.DownloadFileRequest{SandboxId: id, Path: path})
	if err != nil {
		return 0, 0, err
	}
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return announced, got, nil
		}
		if err != nil {
			return announced, got, err
		}
		if info := m.GetInfo(); info != nil {
			announced = info.GetSize()
		}
		n, _ := w.Write(m.GetData())
		got += int64(n)
	}
}

// execOut runs code in sandbox id through Exec and returns its stdout and
// result.
func execOut(ctx context.Context, c execfarmv1.SessionServiceClient, id, code string) (string, *sandboxv1.ExecuteResult, error) {
	st, err := c.Exec(ctx, &execfarmv1.ExecRequest{SandboxId: id, Code: code})
	if err != nil {
		return "", nil, err
	}
	var out strings.Builder
	for {
		m, err := st.Recv()
		if err != nil {
			return out.String(), nil, err
		}
		out.Write(m.GetStdout())
		if r := m.GetResult(); r != nil {
			return out.String(), r, nil
		}
	}
}

// TestSessionBigTransfer uploads 100 MiB of random bytes into a session
// sandbox of an `execfarm serve` process through SessionService and
// downloads them again: byte-identical by sha256 (on both sides of the
// sandbox's wall), while the supervisor process's resident memory,
// sampled from /proc every 5 ms, grows by less than 32 MiB: the file is
// streamed end to end, never held whole.
func TestSessionBigTransfer(t *testing.T) {
	requireRoot(t)
	const size = 100 << 20
	s := startServer(t, 0, "--max-concurrent", "2")
	c := s.sessions()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sb, err := c.CreateSandbox(ctx, &execfarmv1.CreateSandboxRequest{Limits: &sandboxv1.ResourceLimits{WorkspaceBytes: 128 << 20}})
	if err != nil {
		t.Fatalf("CreateSandbox: %v\n%s", err, s.logText())
	}
	id := sb.GetSandboxId()
	// A first small round trip: whatever is allocated once per process
	// (gRPC's buffers, the file path's code) is in the baseline.
	if _, err := upload(ctx, c, id, "warm.bin", strings.NewReader(strings.Repeat("x", 2<<20))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := download(ctx, c, id, "warm.bin", io.Discard); err != nil {
		t.Fatal(err)
	}
	before, err := rssBytes(s.proc.Pid())
	if err != nil {
		t.Fatal(err)
	}
	stopRSS := rssSampler(s.proc.Pid(), 5*time.Millisecond)
	sent := sha256.New()
	src := io.TeeReader(io.LimitReader(mrand.NewChaCha8([32]byte{7, 1, 2}), size), sent)
	began := time.Now()
	n, err := upload(ctx, c, id, "dir/big.bin", src)
	if err != nil || n != size {
		stopRSS()
		t.Fatalf("UploadFile: %d bytes, %v", n, err)
	}
	up := time.Since(began)
	h := sha256.New()
	began = time.Now()
	announced, got, err := download(ctx, c, id, "dir/big.bin", h)
	down := time.Since(began)
	peak, samples, rerr := stopRSS()
	if err != nil || announced != size || got != size {
		t.Fatalf("DownloadFile: announced %d, got %d bytes, %v", announced, got, err)
	}
	if rerr != nil {
		t.Fatalf("sample the supervisor's RSS: %v", rerr)
	}
	want := hex.EncodeToString(sent.Sum(nil))
	if gotSum := hex.EncodeToString(h.Sum(nil)); gotSum != want {
		t.Fatalf("sha256 after the round trip %s, want %s", gotSum, want)
	}
	out, res, err := execOut(ctx, c, id, "sha256sum dir/big.bin | cut -d' ' -f1")
	if err != nil || !res.GetSuccess() || strings.TrimSpace(out) != want {
		t.Fatalf("sha256 inside the sandbox %q (%v, %v), want %s", out, res, err, want)
	}
	t.Logf("supervisor RSS before %s, peak %s over %d samples (grew %s); upload %v, download %v",
		mib(before), mib(peak), samples, mib(peak-before), up.Round(time.Millisecond), down.Round(time.Millisecond))
	if grew := peak - before; grew >= 32<<20 {
		t.Fatalf("the supervisor's RSS grew by %s while moving 100 MiB, want under 32 MiB", mib(grew))
	}
}

// TestTwentySessionSandboxes runs 20 session sandboxes at once, each with
// 10 concurrent flows of upload, exec (which reads the upload and writes
// a file) and download, through an `execfarm serve` process. Nothing is
// lost: every exec's output and every downloaded file is exact, and every
// sandbox's event log holds its 10 execs' starts and ends and its 20
// files written. After the 20 are deleted nothing of them is left: no
// process in the server's uid window, no sandbox cgroup, no mount of the
// server's directory, no uid range in use (the server's metric), and the
// 20 places can be taken again.
func TestTwentySessionSandboxes(t *testing.T) {
	requireRoot(t)
	const (
		sandboxes = 20
		execs     = 10
		fileBytes = 256 << 10
	)
	const slot = 0
	// serve's uid window: --max-concurrent + --warm-pool + --max-sandboxes
	// + 8 = 30 ranges, within the suite's window of 32 from slot 0.
	s := startServer(t, slot, "--max-concurrent", "2", "--max-sandboxes", strconv.Itoa(sandboxes),
		"--max-sandboxes-per-principal", strconv.Itoa(sandboxes),
		"--metrics-address", "127.0.0.1:0")
	metricsURL := metricsAddress(t, s)
	c := s.sessions()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	content := func(sb, i int) []byte {
		b := make([]byte, fileBytes)
		_, _ = mrand.NewChaCha8([32]byte{byte(sb), byte(i), 42}).Read(b)
		return b
	}
	ids := make([]string, sandboxes)
	errs := make(chan error, sandboxes*execs+sandboxes)
	var wg sync.WaitGroup
	began := time.Now()
	for sbi := range sandboxes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb, err := c.CreateSandbox(ctx, &execfarmv1.CreateSandboxRequest{Labels: map[string]string{"n": strconv.Itoa(sbi)}})
			if err != nil {
				errs <- fmt.Errorf("sandbox %d: CreateSandbox: %w", sbi, err)
				return
			}
			id := sb.GetSandboxId()
			ids[sbi] = id
			var flows sync.WaitGroup
			for i := range execs {
				flows.Add(1)
				go func() {
					defer flows.Done()
					data := content(sbi, i)
					sum := sha256.Sum256(data)
					want := hex.EncodeToString(sum[:])
					in, out := fmt.Sprintf("in/f%d", i), fmt.Sprintf("out/f%d", i)
					if n, err := upload(ctx, c, id, in, strings.NewReader(string(data))); err != nil || n != fileBytes {
						errs <- fmt.Errorf("sandbox %d flow %d: UploadFile: %d, %w", sbi, i, n, err)
						return
					}
					code := fmt.Sprintf("mkdir -p out && sha256sum %s | cut -d' ' -f1 | tee %s && cat %s >> %s", in, out, in, out)
					stdout, res, err := execOut(ctx, c, id, code)
					if err != nil || !res.GetSuccess() || stdout != want+"\n" {
						errs <- fmt.Errorf("sandbox %d flow %d: exec printed %q (%v, %v), want %s", sbi, i, stdout, res, err, want)
						return
					}
					var got strings.Builder
					if _, n, err := download(ctx, c, id, out, &got); err != nil || got.String() != want+"\n"+string(data) {
						errs <- fmt.Errorf("sandbox %d flow %d: DownloadFile: %d bytes, %v; not the exec's file", sbi, i, n, err)
					}
				}()
			}
			flows.Wait()
		}()
	}
	wg.Wait()
	close(errs)
	failed := false
	for err := range errs {
		failed = true
		t.Error(err)
	}
	if failed {
		t.Fatalf("serve log:\n%s", s.logText())
	}
	t.Logf("%d sandboxes × %d execs with 2 × %d KiB moved each: %v", sandboxes, execs, fileBytes>>10, time.Since(began).Round(time.Millisecond))

	// The serve flag holds: a 21st is refused, naming it.
	_, err := c.CreateSandbox(ctx, &execfarmv1.CreateSandboxRequest{})
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "--max-sandboxes") {
		t.Errorf("create %d with --max-sandboxes %d: %v, want RESOURCE_EXHAUSTED naming the flag", sandboxes+1, sandboxes, err)
	}

	// Every sandbox's log holds all of it.
	for sbi, id := range ids {
		kinds := map[string]int{}
		for from := int64(0); ; {
			page, err := c.ReadEvents(ctx, &execfarmv1.ReadEventsRequest{SandboxId: id, FromOffset: from, MaxEvents: 1000})
			if err != nil {
				t.Fatalf("sandbox %d: ReadEvents from %d: %v", sbi, from, err)
			}
			for _, ev := range page.GetEvents() {
				if ev.GetOffset() != from {
					t.Fatalf("sandbox %d: event at %d has offset %d", sbi, from, ev.GetOffset())
				}
				from++
				switch {
				case ev.GetExecStarted() != nil:
					kinds["started"]++
				case ev.GetExecEnded() != nil:
					if ev.GetExecEnded().GetResult().GetState() == sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED {
						kinds["ended"]++
					}
				case ev.GetFileWritten() != nil:
					kinds["written"]++
				}
			}
			if from >= page.GetNextOffset() {
				break
			}
		}
		if kinds["started"] != execs || kinds["ended"] != execs || kinds["written"] != execs {
			t.Errorf("sandbox %d's log: %v, want %d started, %d completed, %d files written", sbi, kinds, execs, execs, execs)
		}
	}

	// Delete them all at once.
	var del sync.WaitGroup
	for sbi, id := range ids {
		del.Add(1)
		go func() {
			defer del.Done()
			if _, err := c.DeleteSandbox(ctx, &execfarmv1.DeleteSandboxRequest{SandboxId: id}); err != nil {
				t.Errorf("sandbox %d: DeleteSandbox: %v", sbi, err)
			}
		}()
	}
	del.Wait()
	lo := uidBase + uint32(slot*serverSlots*rangeSize)
	hi := lo + windowSlots*rangeSize
	if procs := hostscan.InUIDWindow(lo, hi); len(procs) > 0 {
		t.Errorf("processes left in the server's uid window: %v", procs)
	}
	for _, parent := range cgroup.Probe(cgroup.Config{Parent: cgParent}).Parents {
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			if e.IsDir() {
				t.Errorf("cgroup left: %s/%s", parent, e.Name())
			}
		}
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mi), "\n") {
			if strings.Contains(line, s.dir) {
				t.Errorf("mount left: %s", line)
			}
		}
	}
	if mi, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", s.proc.Pid())); err == nil {
		for _, line := range strings.Split(string(mi), "\n") {
			if strings.Contains(line, s.dir+"/") {
				t.Errorf("mount left in the supervisor's namespace: %s", line)
			}
		}
	}
	m := scrape(t, metricsURL)
	for name, want := range map[string]float64{
		"execfarm_uid_ranges_in_use":                               0,
		"execfarm_session_sandboxes":                               0,
		"execfarm_executions_running":                              0,
		`execfarm_session_sandboxes_ended_total{reason="deleted"}`: sandboxes,
		`execfarm_session_file_bytes_total{direction="in"}`:        sandboxes * execs * fileBytes,
	} {
		if got, ok := m[name]; !ok || got != want {
			t.Errorf("metric %s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if l, err := c.ListSandboxes(ctx, &execfarmv1.ListSandboxesRequest{}); err != nil || len(l.GetSandboxes()) != 0 {
		t.Errorf("ListSandboxes after the deletes: %v, %v", l, err)
	}
	// Every place and uid range is free again: 20 more fit.
	for i := range sandboxes {
		sb, err := c.CreateSandbox(ctx, &execfarmv1.CreateSandboxRequest{})
		if err != nil {
			t.Fatalf("create %d after the deletes: %v", i, err)
		}
		if _, err := c.DeleteSandbox(ctx, &execfarmv1.DeleteSandboxRequest{SandboxId: sb.GetSandboxId()}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSessionListTwentyThousandFiles lists a directory of 20 000 files
// through ListFiles: max_entries 1000 gives the 1000 first names in byte
// order, total_entries 20000 and truncated; max_entries 0 is 1000; more
// than 10000 is INVALID_ARGUMENT.
func TestSessionListTwentyThousandFiles(t *testing.T) {
	requireRoot(t)
	const files = 20000
	s := startServer(t, 0, "--max-concurrent", "2")
	c := s.sessions()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// 96 MiB of workspace holds 24576 inodes (one per 4 KiB).
	sb, err := c.CreateSandbox(ctx, &execfarmv1.CreateSandboxRequest{Limits: &sandboxv1.ResourceLimits{WorkspaceBytes: 96 << 20}})
	if err != nil {
		t.Fatalf("CreateSandbox: %v\n%s", err, s.logText())
	}
	id := sb.GetSandboxId()
	if out, res, err := execOut(ctx, c, id, fmt.Sprintf(`mkdir big && cd big && i=0; while [ $i -lt %d ]; do : > f$i; i=$((i+1)); done; ls | wc -l`, files)); err != nil || !res.GetSuccess() || strings.TrimSpace(out) != strconv.Itoa(files) {
		t.Fatalf("create the files: %q, %v, %v", out, res, err)
	}
	names := make([]string, files)
	for i := range names {
		names[i] = "f" + strconv.Itoa(i)
	}
	slices.Sort(names)
	for _, max := range []int32{1000, 0} {
		l, err := c.ListFiles(ctx, &execfarmv1.ListFilesRequest{SandboxId: id, Path: "big", MaxEntries: max})
		if err != nil {
			t.Fatalf("ListFiles max_entries %d: %v", max, err)
		}
		if len(l.GetEntries()) != 1000 || l.GetTotalEntries() != files || !l.GetTruncated() {
			t.Fatalf("ListFiles max_entries %d: %d entries, total_entries %d, truncated %v; want 1000, %d, true",
				max, len(l.GetEntries()), l.GetTotalEntries(), l.GetTruncated(), files)
		}
		for i, e := range l.GetEntries() {
			if e.GetName() != names[i] || e.GetType() != execfarmv1.FileType_FILE_TYPE_FILE || e.GetPath() != "/workspace/big/"+names[i] {
				t.Fatalf("entry %d: %v, want the file %s", i, e, names[i])
			}
		}
	}
	if _, err := c.ListFiles(ctx, &execfarmv1.ListFilesRequest{SandboxId: id, Path: "big", MaxEntries: 10001}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("ListFiles max_entries 10001: %v, want INVALID_ARGUMENT", err)
	}
}

var metricsLine = regexp.MustCompile(`serving metrics.*address=http://([0-9.:]+)/metrics`)

// metricsAddress returns the URL of s's metrics endpoint, from its log
// (--metrics-address 127.0.0.1:0 picks a free port).
func metricsAddress(t *testing.T, s *server) string {
	t.Helper()
	m := metricsLine.FindStringSubmatch(s.proc.Log(1 << 20))
	if m == nil {
		t.Fatalf("no metrics address in the log:\n%s", s.logText())
	}
	return "http://" + m[1] + "/metrics"
}

// scrape reads the Prometheus text at url: series (name and labels as
// written) to value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
