//go:build linux

package hostile

import (
	"github.com/execfarm/execfarm/test/hostscan"

	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/test/testbin"
)

// TestHostile runs every case file against the suite's supervisor, in
// parallel, then checks that the supervisor still serves and that nothing
// of any sandbox remains on the host.
func TestHostile(t *testing.T) {
	s := requireRoot(t)
	start := time.Now()
	t.Run("cases", func(t *testing.T) {
		for _, name := range caseFileNames(t) {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s.runCase(t, loadCase(t, name))
			})
		}
	})
	t.Logf("all cases ran in %v", time.Since(start).Round(time.Millisecond))

	t.Run("after", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), testbin.Scaled(time.Minute))
		defer cancel()
		h, err := s.client.HealthCheck(ctx, &sandboxv1.HealthCheckRequest{})
		if err != nil || !h.GetHealthy() {
			t.Fatalf("HealthCheck after the suite: healthy %v, err %v%s", h.GetHealthy(), err, s.logTail())
		}
		// Teardowns may follow the last results; none may go on forever.
		for _, c := range []sandboxv1.SandboxServiceClient{s.client, s.proxied.client} {
			if err := hostscan.Settled(ctx, c); err != nil {
				t.Errorf("HealthCheck after the suite: %v", err)
			}
		}
		resp, err := s.client.Execute(ctx, &sandboxv1.ExecuteRequest{
			Source:  &sandboxv1.ExecuteRequest_Code{Code: "echo still-fine"},
			Runtime: sandboxv1.Runtime_RUNTIME_SHELL,
		})
		if err != nil {
			t.Fatalf("trivial execution after the suite: %v%s", err, s.logTail())
		}
		if !resp.GetSuccess() || resp.GetOutput() != "still-fine\n" {
			t.Errorf("trivial execution after the suite: %s%s", describe(resp), s.logTail())
		}
		// And that one's teardown.
		if err := hostscan.Settled(ctx, s.client); err != nil {
			t.Errorf("HealthCheck after the trivial execution: %v", err)
		}
		if l := s.leftovers(); len(l) > 0 {
			t.Errorf("left on the host after the suite:\n%s", strings.Join(l, "\n"))
		}
		// Other supervisors (another test package, a real server) may run
		// sandboxes on this host at the same time; their uids are at or
		// above 1<<30 but outside this suite's window, so they are only
		// reported.
		for _, p := range hostscan.InUIDWindow(1<<30, ^uint32(0)) {
			if !(p.UIDs[0] >= s.uidBase && p.UIDs[0] < s.uidEnd) {
				t.Logf("note: a process of another sandbox owner is running: %s", p)
			}
		}
	})
}

// runCase runs the steps of c one after the other, each as a new
// execution, and checks each response, then what the case's setups watch.
func (s *suite) runCase(t *testing.T, c *caseFile) {
	vars := map[string]string{
		"MARKER":            "xfh-" + strings.NewReplacer(".", "-", "_", "-").Replace(c.name) + "-" + randomHex(t, 6),
		"STATE_DIR":         s.stateDir,
		"SUPERVISOR_SOCKET": s.socket,
		"SUPERVISOR_LOG":    s.logPath,
		"WORKER_BINARY":     s.worker,
	}
	var checkAfter []func() []string
	var secrets []string
	client, stateDir := s.client, s.stateDir
	for _, setup := range c.setups {
		switch setup {
		case "host-proxy":
			client, stateDir = s.proxied.client, s.proxied.stateDir
			checkAfter = append(checkAfter, s.proxied.check(vars["MARKER"]))
		case "host-tcp-listener":
			port, accepted := hostscan.Listener(t)
			vars["HOST_TCP_PORT"] = strconv.Itoa(port)
			checkAfter = append(checkAfter, func() []string {
				if n := accepted(); n > 0 {
					return []string{fmt.Sprintf("the host listener on 127.0.0.1:%d accepted %d connection(s) from the sandbox", port, n)}
				}
				return nil
			})
		case "host-marker-file":
			path, content := hostMarkerFile(t)
			vars["HOST_MARKER_PATH"], vars["HOST_MARKER_CONTENT"] = path, content
			vars["HOST_MARKER_NAME"] = filepath.Base(path)
			secrets = append(secrets, content)
			checkAfter = append(checkAfter, func() []string {
				if b, err := os.ReadFile(path); err != nil || string(b) != content+"\n" {
					return []string{fmt.Sprintf("host marker file %s changed: %q, %v", path, b, err)}
				}
				return nil
			})
		default:
			t.Fatalf("setup %q not implemented by the runner", setup)
		}
	}
	t.Logf("%s: %s", c.name, c.description)
	if c.session {
		s.runSession(t, c, vars, secrets)
		c.steps = nil // run by runSession
	}
	for i, st := range c.steps {
		label := "step 1"
		if i > 0 {
			label = fmt.Sprintf("then-step %d (line %d)", i+1, st.line)
		}
		ctx, cancel := context.WithTimeout(context.Background(), testbin.Scaled(3*time.Minute))
		began := time.Now()
		var (
			resp *sandboxv1.ExecuteResponse
			bad  []string
			err  error
		)
		if st.test {
			var tr *sandboxv1.ExecuteTestResponse
			if tr, err = client.ExecuteTest(ctx, st.testRequest(vars)); err == nil {
				resp, bad = testResponse(tr), st.checkTests(tr)
				if len(bad) > 0 {
					bad = append(bad, fmt.Sprintf("tests %v, error %q", tr.GetTests(), tr.GetError()))
				}
			}
		} else {
			resp, err = client.Execute(ctx, st.request(vars))
		}
		cancel()
		if err != nil {
			t.Fatalf("%s: Execute: %v%s", label, err, s.logTail())
		}
		bad = append(bad, st.check(resp, vars)...)
		for _, sec := range secrets {
			if strings.Contains(resp.GetOutput(), sec) || strings.Contains(resp.GetErrorOutput(), sec) {
				bad = append(bad, "the output holds the host marker file's content")
			}
		}
		// No process of the execution may run once its result is
		// published; the rest of the sandbox's teardown follows it.
		if ps := hostscan.WithMarker(vars["MARKER"]); len(ps) > 0 {
			for _, p := range ps {
				bad = append(bad, "host process with the case's marker survived: "+p.String())
			}
		}
		for _, l := range s.sandboxGone(stateDir, resp.GetOutcome().GetSandboxId()) {
			bad = append(bad, "left on the host: "+l)
		}
		if len(bad) > 0 {
			t.Errorf("%s:\n  - %s\n  response: %s%s", label, strings.Join(bad, "\n  - "), describe(resp), s.logAbout(resp.GetOutcome().GetSandboxId()))
		} else {
			t.Logf("%s: as expected in %v: %s", label, time.Since(began).Round(time.Millisecond), describe(resp))
		}
	}
	for _, f := range checkAfter {
		for _, b := range f() {
			t.Error(b)
		}
	}
}

// hostMarkerFile creates a world-readable file in /var/tmp holding a
// random secret and returns its path and the secret; it is removed when
// the test ends.
func hostMarkerFile(t *testing.T) (path, content string) {
	content = "xfh-secret-" + randomHex(t, 12)
	f, err := os.CreateTemp("/var/tmp", "execfarm-hostile-marker-")
	if err != nil {
		t.Fatalf("host marker file: %v", err)
	}
	t.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := f.WriteString(content + "\n"); err != nil {
		t.Fatalf("host marker file: %v", err)
	}
	if err := f.Chmod(0o644); err != nil {
		t.Fatalf("host marker file: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("host marker file: %v", err)
	}
	return f.Name(), content
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("random: %v", err)
	}
	return hex.EncodeToString(b)
}
