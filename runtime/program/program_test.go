package program

import (
	"errors"
	"testing"

	"github.com/execfarm/execfarm/runtime/transform"
)

// TestEnvReservedPrefix: a request may not set execfarm's own switches,
// and may set everything else.
func TestEnvReservedPrefix(t *testing.T) {
	for _, k := range []string{"EXECFARM_DETERMINISTIC", "EXECFARM_READY_FD", "EXECFARM_"} {
		if _, err := Build(Input{Runtime: Shell, Code: "true", Env: map[string]string{k: "1"}}); !errors.Is(err, ErrBadEnv) {
			t.Errorf("env %s: err = %v, want ErrBadEnv", k, err)
		}
	}
	req, err := Build(Input{Runtime: Shell, Code: "true", Env: map[string]string{"MY_EXECFARM_X": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range req.GetEnv() {
		found = found || e == "MY_EXECFARM_X=1"
	}
	if !found {
		t.Fatalf("env %q lacks MY_EXECFARM_X=1", req.GetEnv())
	}
}

// TestPythonUnbuffered: python runs with -u, so what it printed before a
// timeout or kill reaches the pipe (hostile case output_before_timeout.py).
func TestPythonUnbuffered(t *testing.T) {
	req, err := Build(Input{Runtime: Python, Code: "print(1)", Env: map[string]string{"PYTHONUNBUFFERED": ""}})
	if err != nil {
		t.Fatal(err)
	}
	if got := req.GetArgv(); len(got) != 4 || got[1] != "-u" || got[2] != "-c" || got[3] != "print(1)" {
		t.Fatalf("argv %q, want python3 -u -c CODE", got)
	}
}

// TestWhitespaceIsCode: code of only whitespace is a program that does
// nothing, in every runtime; only empty code is refused.
func TestWhitespaceIsCode(t *testing.T) {
	for _, rt := range []string{Goja, Shell, Python} {
		if _, err := Build(Input{Runtime: rt, Code: ""}); !errors.Is(err, transform.ErrEmptyCode) {
			t.Errorf("%s, empty code: err = %v, want ErrEmptyCode", rt, err)
		}
		if _, err := Build(Input{Runtime: rt, Code: " \n\t"}); err != nil {
			t.Errorf("%s, whitespace: err = %v, want none", rt, err)
		}
	}
}
