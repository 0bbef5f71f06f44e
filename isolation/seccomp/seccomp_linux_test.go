package seccomp

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/execfarm/execfarm/isolation/seccomp/install"
)

// requireSeccomp skips when the host cannot load the filter.
func requireSeccomp(t *testing.T) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("the policy is written for x86_64")
	}
	if ok, why := Supported(); !ok {
		t.Skip("seccomp not supported: " + why)
	}
}

func TestSupported(t *testing.T) {
	ok, why := Supported()
	t.Logf("Supported() = %v, %q", ok, why)
	if why == "" {
		t.Error("Supported gave no reason")
	}
	// This kernel answers prctl(PR_GET_SECCOMP); if it does, filter mode with
	// the actions Load needs must be reported available on Linux >= 4.14.
	if _, err := os.Stat("/proc/sys/kernel/seccomp/actions_avail"); err == nil && runtime.GOARCH == "amd64" {
		avail, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(avail, []byte("kill_process")) && !ok {
			t.Errorf("actions_avail lists %q but Supported() = false: %s", bytes.TrimSpace(avail), why)
		}
	}
}

// helperResults re-executes the test binary as the helper process
// (runHelper) in mode and returns what each probe reported.
func helperResults(t *testing.T, mode string) map[string]string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr // stdin is /dev/null: the ioctl probes rely on it
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper (%s): %v\nstderr: %s", mode, err, stderr.String())
	}
	var results map[string]string
	if err := json.Unmarshal(stdout.Bytes(), &results); err != nil {
		t.Fatalf("decode helper output %q: %v\nstderr: %s", stdout.String(), err, stderr.String())
	}
	return results
}

// TestLoad loads the filter in a helper process and checks what it could and
// could not do afterwards.
func TestLoad(t *testing.T) {
	requireSeccomp(t)
	results := helperResults(t, helperFiltered)
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			got, ok := results[p.name]
			switch {
			case !ok:
				t.Fatal("no result from helper")
			case got == absent:
				t.Skip("program not installed")
			case got != p.want:
				t.Errorf("after Load: %q, want %q", got, p.want)
			}
		})
	}
}

// TestLoadControl runs the same probes without the filter: every denial that
// TestLoad sees must then be absent, or TestLoad proves nothing.
func TestLoadControl(t *testing.T) {
	requireSeccomp(t)
	results := helperResults(t, helperControl)
	for _, p := range probes {
		if p.want != "EPERM" && p.want != "ENOSYS" {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			got := results[p.name]
			if kernelAgrees[p.name] {
				t.Skipf("kernel answers %q without the filter too", got)
			}
			if got == p.want {
				t.Errorf("without the filter: %q too, so the filtered result does not show the filter works", got)
			}
		})
	}
}

// TestEncodedIsTheProgram: what the supervisor hands workers decodes to
// the assembled policy, instruction for instruction.
func TestEncodedIsTheProgram(t *testing.T) {
	b, err := Encoded()
	if err != nil {
		t.Fatal(err)
	}
	got, err := install.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	want, err := instructions()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) < 100 {
		t.Fatalf("decoded %d instructions, want %d (> 100)", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("instruction %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
