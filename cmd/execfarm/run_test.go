package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
