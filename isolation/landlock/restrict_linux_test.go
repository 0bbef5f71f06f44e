//go:build linux

package landlock

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// helperResult maps a probe name to "ok" or the errno name it met.
type helperResult map[string]string

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return unix.ErrnoName(en)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return "exit " + ee.String()
	}
	return err.Error()
}

// runHelper restricts itself to reading "/" and writing dir/rw, then
// probes from its own thread, another thread and a child process; the
// cat started before Restrict is outside the domain.
func runHelper(dir string) int {
	res := helperResult{}
	defer func() { _ = json.NewEncoder(os.Stdout).Encode(res) }()
	// The outside process cannot be signalled once the domain exists: it
	// ends with EOF on its stdin when the helper exits.
	outside := exec.Command("/bin/cat")
	if _, err := outside.StdinPipe(); err != nil {
		res["setup"] = err.Error()
		return 1
	}
	if err := outside.Start(); err != nil {
		res["setup"] = err.Error()
		return 1
	}
	abstract, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		err = unix.Bind(abstract, &unix.SockaddrUnix{Name: "@execfarm-landlock-test"})
	}
	if err == nil {
		err = unix.Listen(abstract, 1)
	}
	if err != nil {
		res["setup"] = err.Error()
		return 1
	}
	defer unix.Close(abstract)

	err = Restrict(Config{
		ReadOnly:  []string{"/"},
		ReadWrite: []string{filepath.Join(dir, "rw")},
		Devices:   []string{"/dev/null"},
	})
	res["restrict"] = errName(err)
	if err != nil {
		res["restrict error"] = err.Error()
		return 1
	}
	res["write rw"] = errName(os.WriteFile(filepath.Join(dir, "rw", "f"), []byte("x"), 0o644))
	res["mkdir+rename rw"] = errName(errors.Join(
		os.Mkdir(filepath.Join(dir, "rw", "sub"), 0o755),
		os.Rename(filepath.Join(dir, "rw", "f"), filepath.Join(dir, "rw", "sub", "f"))))
	res["write ro"] = errName(os.WriteFile(filepath.Join(dir, "ro", "f"), []byte("x"), 0o644))
	res["read ro"] = errName(func() error { _, err := os.ReadFile(filepath.Join(dir, "ro", "data")); return err }())
	res["write /dev/null"] = errName(os.WriteFile("/dev/null", []byte("x"), 0o644))
	done := make(chan string)
	go func() {
		runtime.LockOSThread() // a fresh thread, never the caller's
		done <- errName(os.WriteFile(filepath.Join(dir, "ro", "g"), []byte("x"), 0o644))
	}()
	res["write ro other thread"] = <-done
	res["child write ro"] = errName(exec.Command("/bin/touch", filepath.Join(dir, "ro", "h")).Run())
	res["child exec"] = errName(exec.Command("/bin/true").Run())
	res["signal outside"] = errName(unix.Kill(outside.Process.Pid, 0))
	c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		err = unix.Connect(c, &unix.SockaddrUnix{Name: "@execfarm-landlock-test"})
		unix.Close(c)
	}
	res["connect abstract outside"] = errName(err)
	return 0
}

func TestRestrict(t *testing.T) {
	abi, err := ABI()
	if errors.Is(err, ErrNotSupported) {
		t.Skipf("kernel has no landlock: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{"rw", "ro"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "ro", "data"), []byte("d"), 0o666); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, runErr := cmd.Output()
	var res helperResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("helper output %q: %v (exit %v)", out, err, runErr)
	}
	scoped := "EPERM"
	if abi < 6 {
		scoped = "ok"
	}
	want := helperResult{
		"restrict":                 "ok",
		"write rw":                 "ok",
		"mkdir+rename rw":          "ok",
		"write ro":                 "EACCES",
		"read ro":                  "ok",
		"write /dev/null":          "ok",
		"write ro other thread":    "EACCES",
		"child write ro":           "exit exit status 1",
		"child exec":               "ok",
		"signal outside":           scoped,
		"connect abstract outside": scoped,
	}
	for k, w := range want {
		if res[k] != w {
			t.Errorf("%s: got %q, want %q", k, res[k], w)
		}
	}
	if runErr != nil {
		t.Errorf("helper: %v", runErr)
	}
	// Control: without Landlock the helper's directory is writable, so
	// the EACCES above can only come from the domain.
	if err := os.WriteFile(filepath.Join(dir, "ro", "f"), []byte("x"), 0o644); err != nil {
		t.Fatalf("control write: %v", err)
	}
}
