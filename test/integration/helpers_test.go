//go:build linux

package integration

import (
	"github.com/execfarm/execfarm/test/hostscan"

	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/test/testbin"
)

// requireSandbox is the one gate of every test: it skips when the host
// cannot isolate (with the reason), fails when the host probe reported
// every layer present but the supervisor or a first sandbox did not
// start, and otherwise returns the shared supervisor.
func requireSandbox(t testing.TB) *instance {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("integration: the host reports every isolation layer, but sandboxes do not run: %v", setupErr)
	}
	if shared == nil {
		t.Skipf("integration: host cannot run sandboxes: %s", skipReason)
	}
	return shared
}

// requirePython skips when the host has no /usr/bin/python3 (the python
// runtime's interpreter, bind-mounted into sandboxes).
func requirePython(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skipf("integration: python runtime unavailable: %v", err)
	}
}

// request runs code in rt with raw output (the program's stdout and
// stderr as written, whatever the runtime: ExecuteRequest.raw_output);
// test/compat checks the ProDisco view of goja and node.
func request(rt sandboxv1.Runtime, code string, timeoutMs int64) *sandboxv1.ExecuteRequest {
	req := &sandboxv1.ExecuteRequest{Source: &sandboxv1.ExecuteRequest_Code{Code: code}, Runtime: rt, RawOutput: true}
	if timeoutMs > 0 {
		req.Limits = &sandboxv1.ResourceLimits{TimeoutMs: timeoutMs}
	}
	return req
}

// shellReq runs code with /bin/sh -c; timeoutMs 0 = the server's default.
func shellReq(code string, timeoutMs int64) *sandboxv1.ExecuteRequest {
	return request(sandboxv1.Runtime_RUNTIME_SHELL, code, timeoutMs)
}

// gojaReq runs TypeScript/JavaScript in goja; timeoutMs 0 = default.
func gojaReq(code string, timeoutMs int64) *sandboxv1.ExecuteRequest {
	return request(sandboxv1.Runtime_RUNTIME_GOJA, code, timeoutMs)
}

// pythonReq runs python3 -c code; timeoutMs 0 = default.
func pythonReq(code string, timeoutMs int64) *sandboxv1.ExecuteRequest {
	return request(sandboxv1.Runtime_RUNTIME_PYTHON, code, timeoutMs)
}

// callCtx bounds one test's calls: nothing in this suite should take a
// minute (times testbin.TimeScale), and a hang must fail rather than
// stall the run.
func callCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testbin.Scaled(time.Minute))
	t.Cleanup(cancel)
	return ctx
}

// execute runs req through Execute and fails the test on an RPC error.
func execute(t testing.TB, c sandboxv1.SandboxServiceClient, req *sandboxv1.ExecuteRequest) *sandboxv1.ExecuteResponse {
	t.Helper()
	resp, err := c.Execute(callCtx(t), req)
	if err != nil {
		t.Fatalf("Execute(%q): %v", req.GetCode(), err)
	}
	return resp
}

// describe renders a response for failure messages.
func describe(r *sandboxv1.ExecuteResponse) string {
	o := r.GetOutcome()
	return fmt.Sprintf("state %s reason %s exit %d signal %d error %q stdout %q stderr %q",
		r.GetState(), o.GetTerminationReason(), o.GetExitCode(), o.GetSignal(), r.GetError(), r.GetOutput(), r.GetErrorOutput())
}

// waitOutput polls the execution until its stdout contains want or it
// ends; it returns the last response. Polling a state (never sleeping in
// the hope that something happened) is how a test learns that an
// asynchronous program has reached a point: the API has no "wait for
// output" call.
func waitOutput(ctx context.Context, t testing.TB, c sandboxv1.SandboxServiceClient, id, want string) *sandboxv1.GetExecutionResponse {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := c.GetExecution(ctx, &sandboxv1.GetExecutionRequest{ExecutionId: id})
		if err != nil {
			t.Fatalf("GetExecution(%s): %v", id, err)
		}
		if strings.Contains(resp.GetOutput(), want) || resp.GetResult() != nil {
			return resp
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("execution %s: no %q in stdout before %v", id, want, ctx.Err())
		}
	}
}

// median returns the median of ds (which it sorts).
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// settled waits until every execution of in has finished its sandbox's
// teardown (hostscan.Settled), 30 s at most in the environment's time.
func settled(t testing.TB, in *instance) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testbin.Scaled(30*time.Second))
	defer cancel()
	if err := hostscan.Settled(ctx, in.client); err != nil {
		t.Fatal(err)
	}
}

// sandboxProcs returns the host processes (zombies included) with a uid in
// the suite's window: what is left of sandboxes.
func sandboxProcs() []hostscan.Proc { return hostscan.InUIDWindow(host.uidBase, host.uidEnd) }

// leftovers lists what remains of sandboxes on the host: directories under
// the instances' state dirs' sb/ folders, cgroups under the suite's parent
// (every controller), mounts below the suite's directory, and processes in
// the suite's uid window. Empty means every sandbox was destroyed.
func leftovers(instances ...*instance) []string {
	var out []string
	for _, in := range instances {
		ents, _ := os.ReadDir(filepath.Join(in.stateDir, "sb"))
		for _, e := range ents {
			out = append(out, "state dir "+filepath.Join(in.stateDir, "sb", e.Name()))
		}
	}
	for _, parent := range host.cgParents {
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			if e.IsDir() {
				out = append(out, "cgroup "+filepath.Join(parent, e.Name()))
			}
		}
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mi), "\n") {
			if strings.Contains(line, host.dir) {
				out = append(out, "mount "+line)
			}
		}
	}
	for _, p := range sandboxProcs() {
		out = append(out, "process "+p.String())
	}
	return out
}

// sandboxCgroups returns the cgroup directories of sandbox id that exist.
func sandboxCgroups(id string) []string {
	var out []string
	if id == "" {
		return nil // no sandbox: the parent itself is not one
	}
	for _, parent := range host.cgParents {
		d := filepath.Join(parent, id)
		if _, err := os.Stat(d); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// openFDs counts the test process's open file descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("list fds: %v", err)
	}
	return len(ents) - 1 // the directory read itself
}

// fdList describes the open file descriptors, for failure messages.
func fdList() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var b strings.Builder
	for _, e := range ents {
		l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		fmt.Fprintf(&b, "%s -> %s\n", e.Name(), l)
	}
	return b.String()
}
