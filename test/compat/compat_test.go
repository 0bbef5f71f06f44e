//go:build linux

package compat

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/test/testbin"
)

// requireRoot skips a test that needs root: sandboxes use user, pid and
// mount namespaces and cgroups, which only root may set up here.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the supervisor creates namespaces and cgroups")
	}
}

// buildWorker builds execfarm-worker into a fresh directory and returns
// its path. The directory comes from os.MkdirTemp and is opened to 0755,
// not t.TempDir (whose parent is 0700): the sandbox's unprivileged root
// must be able to exec the binary.
func buildWorker(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "execfarm-compat-worker-")
	if err != nil {
		t.Fatalf("make worker dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("open worker dir: %v", err)
	}
	bin := filepath.Join(dir, "execfarm-worker")
	if err := testbin.Build(dir, testbin.Sandbox...); err != nil {
		t.Fatal(err)
	}
	return bin
}

// startSupervisor starts an embedded supervisor with a freshly built
// worker and returns its unix socket path; it is stopped at cleanup.
func startSupervisor(t *testing.T) string {
	t.Helper()
	return startSupervisorWith(t, nil)
}

// startSupervisorWith is startSupervisor with cfg changed by configure
// (nil = not changed) before the supervisor starts.
func startSupervisorWith(t *testing.T, configure func(cfg *supervisor.Config)) string {
	t.Helper()
	var cfg supervisor.Config
	cfg.Sandbox.WorkerBinary = buildWorker(t)
	cfg.Version = "compat-test"
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "execfarm", Level: hclog.Warn, Output: os.Stderr})
	if configure != nil {
		configure(&cfg)
	}
	tc, stop, err := supervisor.Embedded(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("start embedded supervisor: %v", err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stop supervisor: %v", err)
		}
	})
	if tc.SocketPath == "" {
		t.Fatal("embedded supervisor reported no unix socket")
	}
	return tc.SocketPath
}

// clientResults is what client.mjs prints on success.
type clientResults struct {
	HealthCheck struct {
		Healthy bool `json:"healthy"`
	} `json:"healthCheck"`
	Execute struct {
		Success bool   `json:"success"`
		Output  string `json:"output"`
	} `json:"execute"`
	ExecuteStream struct {
		ExecutionID  string `json:"executionId"`
		OutputChunks int    `json:"outputChunks"`
		Output       string `json:"output"`
		Result       struct {
			Success bool   `json:"success"`
			State   string `json:"state"`
		} `json:"result"`
	} `json:"executeStream"`
	ExecuteAsync struct {
		ExecutionID  string `json:"executionId"`
		InitialState string `json:"initialState"`
		State        string `json:"state"`
		Output       string `json:"output"`
		OutputLength int64  `json:"outputLength"`
		Result       struct {
			Success bool   `json:"success"`
			State   string `json:"state"`
		} `json:"result"`
	} `json:"executeAsync"`
	UnknownExecution struct {
		Code string `json:"code"`
	} `json:"unknownExecution"`
}

// TestProDiscoClient runs the Node.js ProDisco client against a real
// supervisor. client.mjs asserts each RPC itself and exits non-zero with
// the failing step; the checks here make sure it really ran them all.
func TestProDiscoClient(t *testing.T) {
	requireRoot(t)
	requireNode(t)
	socket := startSupervisor(t)

	out := runNode(t, socket)
	var res clientResults
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("decode client.mjs output: %v\n%s", err, out)
	}
	t.Logf("client.mjs: %s", out)

	checks := []struct {
		name string
		ok   bool
	}{
		{"HealthCheck healthy", res.HealthCheck.Healthy},
		{"Execute success", res.Execute.Success},
		{"Execute output", res.Execute.Output == "hello from execfarm"},
		{"ExecuteStream execution id", res.ExecuteStream.ExecutionID != ""},
		{"ExecuteStream output", res.ExecuteStream.Output == "line 1\nline 2\nline 3\n"},
		{"ExecuteStream output chunks", res.ExecuteStream.OutputChunks >= 1},
		{"ExecuteStream result success", res.ExecuteStream.Result.Success},
		{"ExecuteStream result state", res.ExecuteStream.Result.State == "EXECUTION_STATE_COMPLETED"},
		{"ExecuteAsync execution id", res.ExecuteAsync.ExecutionID != ""},
		{"ExecuteAsync initial state", res.ExecuteAsync.InitialState == "EXECUTION_STATE_PENDING" || res.ExecuteAsync.InitialState == "EXECUTION_STATE_RUNNING"},
		{"GetExecution state", res.ExecuteAsync.State == "EXECUTION_STATE_COMPLETED"},
		{"GetExecution output", res.ExecuteAsync.Output == "async done\n"},
		{"GetExecution output length", res.ExecuteAsync.OutputLength == int64(len("async done\n"))},
		{"GetExecution result", res.ExecuteAsync.Result.Success && res.ExecuteAsync.Result.State == "EXECUTION_STATE_COMPLETED"},
		{"GetExecution unknown id", res.UnknownExecution.Code == "NOT_FOUND"},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !c.ok {
				t.Errorf("%s: unexpected client result (see client.mjs output above)", c.name)
			}
		})
	}
}
