package main

import (
	"fmt"
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

// TestReadSourceIsBounded: a program or tests file, or standard input,
// of more than maxCode bytes is refused after maxCode+1 bytes, with a
// message naming the bound; an endless source (/dev/zero, a pipe that
// never ends) is not read further. A red-team pass found `run /dev/zero`
// at 1.7 GB after 20 s, and 200 MB piped to `run -` read whole, then
// refused by gRPC as "message larger than max".
func TestReadSourceIsBounded(t *testing.T) {
	dir := t.TempDir()
	fits, big := filepath.Join(dir, "fits"), filepath.Join(dir, "big")
	if err := os.WriteFile(fits, make([]byte, maxCode), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, make([]byte, maxCode+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readSource(fits); err != nil || len(b) != maxCode {
		t.Errorf("readSource of %d bytes: %d bytes, %v", maxCode, len(b), err)
	}
	want := fmt.Sprintf("is over %d bytes", maxCode)
	if _, err := readSource(big); err == nil || !strings.Contains(err.Error(), big+" "+want) {
		t.Errorf("readSource of %d bytes: %v, want an error saying %q", maxCode+1, err, want)
	}
	stdin := os.Stdin
	t.Cleanup(func() { os.Stdin = stdin })
	f, err := os.Open(big)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	os.Stdin = f
	if _, err := readSource("-"); err == nil || !strings.Contains(err.Error(), "standard input "+want) {
		t.Errorf("readSource(-) of %d bytes: %v, want an error saying %q", maxCode+1, err, want)
	}
	endless := &countingZeros{}
	if _, err := readCode("endless", endless); err == nil || endless.n > maxCode+1 {
		t.Errorf("an endless source: %v after %d bytes read, want a refusal after at most %d", err, endless.n, maxCode+1)
	}
	if err := checkRequestBytes(requestPart{"the program", maxCode - 10}, requestPart{"--stdin", 11}); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("the program (%d bytes) and --stdin (11 bytes) are %d bytes together", maxCode-10, maxCode+1)) {
		t.Errorf("a program and stdin one byte over: %v", err)
	}
	if err := checkRequestBytes(requestPart{"the program", maxCode - 10}, requestPart{"--stdin", 10}); err != nil {
		t.Errorf("a program and stdin at the bound: %v", err)
	}
}

// countingZeros is an endless reader of zeros that counts what it gave.
type countingZeros struct{ n int }

func (z *countingZeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += len(p)
	return len(p), nil
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
