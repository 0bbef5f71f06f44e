package program

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/execfarm/execfarm/runtime/transform"
)

// TestEnvReservedPrefix: a request may not set execfarm's own switches,
// and may set everything else.
func TestEnvReservedPrefix(t *testing.T) {
	for _, k := range []string{"EXECFARM_DETERMINISTIC", "EXECFARM_READY_FD", "EXECFARM_"} {
		if _, err := Build(context.Background(), Input{Runtime: Shell, Code: "true", Env: map[string]string{k: "1"}}); !errors.Is(err, ErrBadEnv) {
			t.Errorf("env %s: err = %v, want ErrBadEnv", k, err)
		}
	}
	req, err := Build(context.Background(), Input{Runtime: Shell, Code: "true", Env: map[string]string{"MY_EXECFARM_X": "1"}})
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
	req, err := Build(context.Background(), Input{Runtime: Python, Code: "print(1)", Env: map[string]string{"PYTHONUNBUFFERED": ""}})
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
		if _, err := Build(context.Background(), Input{Runtime: rt, Code: ""}); !errors.Is(err, transform.ErrEmptyCode) {
			t.Errorf("%s, empty code: err = %v, want ErrEmptyCode", rt, err)
		}
		if _, err := Build(context.Background(), Input{Runtime: rt, Code: " \n\t"}); err != nil {
			t.Errorf("%s, whitespace: err = %v, want none", rt, err)
		}
	}
}

// TestArgumentLimits: shell and python code goes to execve as one
// argument; code past MAX_ARG_STRLEN (or an environment past the total)
// is an *ArgError naming the field, before any sandbox; goja takes its
// program on a descriptor and has no such limit.
func TestArgumentLimits(t *testing.T) {
	long := strings.Repeat("x", MaxArgBytes+1)
	for _, rt := range []string{Shell, Python} {
		var ae *ArgError
		if _, err := Build(context.Background(), Input{Runtime: rt, Code: long}); !errors.As(err, &ae) || ae.Field != "code" || !errors.Is(err, ErrArgTooLong) {
			t.Errorf("%s with %d bytes of code: %v, want an ArgError for code", rt, len(long), err)
		}
		if _, err := Build(context.Background(), Input{Runtime: rt, Code: long[:MaxArgBytes]}); err != nil {
			t.Errorf("%s with %d bytes of code: %v", rt, MaxArgBytes, err)
		}
	}
	env := map[string]string{}
	for i := range 10 {
		env[fmt.Sprintf("V%d", i)] = strings.Repeat("e", 120<<10)
	}
	var ae *ArgError
	if _, err := Build(context.Background(), Input{Runtime: Shell, Code: "true", Env: env}); !errors.As(err, &ae) || ae.Field != "env" {
		t.Errorf("1.2 MB of environment: %v, want an ArgError for env", err)
	}
	if _, err := Build(context.Background(), Input{Runtime: Goja, Code: "// " + strings.Repeat("x", 3<<20) + "\nconsole.log(1)"}); err != nil {
		t.Errorf("3 MiB of goja code: %v", err)
	}
}

// TestNULInAnArgument: shell and python code holding a NUL byte, which
// becomes a command-line argument, is a *NULError naming code before a
// sandbox is spent (red-team pass: it ended FAILED INTERNAL "start
// /bin/sh: invalid argument"); goja and node get their program on a
// descriptor, where a NUL is a character like another.
func TestNULInAnArgument(t *testing.T) {
	for _, rt := range []string{Shell, Python} {
		var ne *NULError
		_, err := Build(context.Background(), Input{Runtime: rt, Code: "echo a\x00b"})
		if !errors.As(err, &ne) || ne.Field != "code" || ne.Offset != 6 || !errors.Is(err, ErrNULByte) {
			t.Errorf("%s with a NUL in code: %v, want a NULError for code at byte 6", rt, err)
		}
	}
	for _, rt := range []string{Goja} {
		if _, err := Build(context.Background(), Input{Runtime: rt, Code: "console.log('a\x00b')"}); err != nil {
			t.Errorf("%s with a NUL in code: %v", rt, err)
		}
	}
	var ne *NULError
	if err := CheckArg("command", "\x00"); !errors.As(err, &ne) || !strings.HasPrefix(err.Error(), "command holds a NUL byte") {
		t.Errorf("CheckArg(command, NUL) = %v, want a NULError naming command", err)
	}
}

// TestRequestOverWhatTheWorkerTakes: a program whose request is over
// MaxRequestBytes once transformed (lowering blows `using` up ~30 times)
// is a *SizeError before a sandbox is spent; so is stdin that fills it.
func TestRequestOverWhatTheWorkerTakes(t *testing.T) {
	var se *SizeError
	blowup := strings.Repeat("{ using a = b }\n", 20000) // 320 KB
	if _, err := Build(context.Background(), Input{Runtime: Goja, Code: blowup}); !errors.As(err, &se) {
		t.Errorf("%d bytes of using: %v, want a SizeError", len(blowup), err)
	} else if se.Bytes <= MaxRequestBytes || se.Limit != MaxRequestBytes {
		t.Errorf("SizeError %+v", se)
	}
	stdin := make([]byte, MaxRequestBytes)
	if _, err := Build(context.Background(), Input{Runtime: Shell, Code: "cat", Stdin: stdin}); !errors.As(err, &se) {
		t.Errorf("%d bytes of stdin: %v, want a SizeError", len(stdin), err)
	}
	if _, err := Build(context.Background(), Input{Runtime: Shell, Code: "cat", Stdin: stdin[:MaxRequestBytes-1024]}); err != nil {
		t.Errorf("%d bytes of stdin: %v", MaxRequestBytes-1024, err)
	}
}

// TestEnvOnlyWhereItArrives: a goja or node program's process.env is
// empty, so env given for one is refused rather than dropped unseen
// (red-team pass: run --env REGION=eu with goja ran with process.env {}).
func TestEnvOnlyWhereItArrives(t *testing.T) {
	for _, rt := range []string{Goja, Node} {
		_, err := Build(context.Background(), Input{Runtime: rt, Code: "console.log(1)", Env: map[string]string{"REGION": "eu"}})
		if !errors.Is(err, ErrBadEnv) || !strings.Contains(err.Error(), "process.env is empty") {
			t.Errorf("%s with env: %v; want ErrBadEnv saying process.env is empty", rt, err)
		}
	}
}
