package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// TestReadStdin: --stdin reads a file whole, and refuses one over maxStdin
// rather than sending a request the server cannot receive.
func TestReadStdin(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("a\nb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readStdin(small); err != nil || string(b) != "a\nb\n" {
		t.Fatalf("readStdin(small) = %q, %v", b, err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, maxStdin+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readStdin(big); err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("readStdin(big) = %v, want a size error", err)
	}
	if _, err := readStdin(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("readStdin(missing) = nil")
	}
}

// TestDeterministicFlags: --seed needs --deterministic, and
// --deterministic needs a runtime that has the clock (goja, node, or the
// server's default, which the server checks).
func TestDeterministicFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		rt      sandboxv1.Runtime
		wantErr string
	}{
		{[]string{"--deterministic", "--seed", "7"}, sandboxv1.Runtime_RUNTIME_NODE, ""},
		{[]string{"--deterministic"}, sandboxv1.Runtime_RUNTIME_UNSPECIFIED, ""},
		{[]string{"--seed", "7"}, sandboxv1.Runtime_RUNTIME_GOJA, "--seed needs --deterministic"},
		{[]string{"--deterministic"}, sandboxv1.Runtime_RUNTIME_SHELL, "goja or node runtime, not shell"},
		{[]string{"--deterministic"}, sandboxv1.Runtime_RUNTIME_PYTHON, "goja or node runtime, not python"},
	} {
		var d deterministicFlags
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		d.register(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		_, _, err := d.get(fs, tc.rt)
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%q with runtime %s: %v, want %q", tc.args, tc.rt.Name(), err, tc.wantErr)
		}
	}
}
