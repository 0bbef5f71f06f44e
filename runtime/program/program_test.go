package program

import (
	"errors"
	"testing"
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
