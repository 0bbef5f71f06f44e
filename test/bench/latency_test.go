//go:build linux

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor"
)

// samples is how many timed runs each series takes.
const samples = 200

type series struct {
	name string
	d    []time.Duration
}

func (s series) pct(p float64) time.Duration {
	d := slices.Clone(s.d)
	slices.Sort(d)
	i := int(p * float64(len(d)-1))
	return d[i]
}

func buildWorker(b *testing.B) string {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("benchmarks need root (namespaces, cgroups)")
	}
	dir, err := os.MkdirTemp("", "execfarm-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "execfarm-worker")
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/execfarm-worker")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build worker: %v\n%s", err, out)
	}
	return bin
}

func timeExec(b *testing.B, name string, argv ...string) series {
	s := series{name: name}
	for i := 0; i < samples; i++ {
		t0 := time.Now()
		cmd := exec.Command(argv[0], argv[1:]...)
		_ = cmd.Run() // the worker without a config exits 2 at once: we time fork+exec+wait
		s.d = append(s.d, time.Since(t0))
	}
	return s
}

func timeExecute(b *testing.B, client sandboxv1.SandboxServiceClient, name string, rt sandboxv1.Runtime, code string) series {
	s := series{name: name}
	req := &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: code}, Runtime: rt}
	for i := 0; i < samples+5; i++ {
		t0 := time.Now()
		resp, err := client.Execute(context.Background(), req)
		d := time.Since(t0)
		if err != nil || !resp.GetSuccess() {
			b.Fatalf("%s: err %v resp %v", name, err, resp)
		}
		if i >= 5 { // warm-up
			s.d = append(s.d, d)
		}
	}
	return s
}

// BenchmarkExecuteLatency measures Execute over the unix socket with no
// warm pool (every execution starts a fresh sandbox), against a bare
// fork+exec+wait of the worker binary and of /bin/true.
func BenchmarkExecuteLatency(b *testing.B) {
	worker := buildWorker(b)
	cfg := supervisor.Config{MaxConcurrent: 1}
	cfg.Sandbox.WorkerBinary = worker
	tc, stop, err := supervisor.Embedded(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	conn, err := tc.Dial()
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	client := sandboxv1.NewSandboxServiceClient(conn)
	for i := 0; i < b.N; i++ {
		bareWorker := timeExec(b, "fork+exec+wait execfarm-worker", worker)
		bareTrue := timeExec(b, "fork+exec+wait /bin/true", "/bin/true")
		goja := timeExecute(b, client, "Execute goja console.log(1)", sandboxv1.Runtime_RUNTIME_GOJA, "console.log(1)")
		shell := timeExecute(b, client, "Execute shell true", sandboxv1.Runtime_RUNTIME_SHELL, "true")
		base := bareWorker.pct(0.5)
		fmt.Printf("\n%-34s %10s %10s %14s\n", "series ("+fmt.Sprint(samples)+" runs)", "p50", "p99", "p50/bare-worker")
		for _, s := range []series{bareWorker, bareTrue, goja, shell} {
			fmt.Printf("%-34s %10s %10s %14.1fx\n", s.name, s.pct(0.5).Round(time.Microsecond), s.pct(0.99).Round(time.Microsecond),
				float64(s.pct(0.5))/float64(base))
		}
		b.ReportMetric(float64(goja.pct(0.5).Microseconds()), "goja-p50-µs")
		b.ReportMetric(float64(goja.pct(0.99).Microseconds()), "goja-p99-µs")
		b.ReportMetric(float64(goja.pct(0.5))/float64(base), "goja-p50/bare")
		b.ReportMetric(float64(shell.pct(0.5))/float64(bareTrue.pct(0.5)), "shell-p50/true")
	}
}
