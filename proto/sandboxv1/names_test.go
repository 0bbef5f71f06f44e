package sandboxv1

import "testing"

func TestNames(t *testing.T) {
	for v, name := range map[Runtime]string{Runtime_RUNTIME_UNSPECIFIED: "", Runtime_RUNTIME_GOJA: "goja", Runtime_RUNTIME_PYTHON: "python"} {
		if got := v.Name(); got != name {
			t.Errorf("%v.Name() = %q, want %q", v, got, name)
		}
		if r, ok := ParseRuntime(name); !ok || r != v {
			t.Errorf("ParseRuntime(%q) = %v, %v", name, r, ok)
		}
	}
	for _, bad := range []string{"unspecified", "GOJA", "ruby", "runtime_goja"} {
		if _, ok := ParseRuntime(bad); ok {
			t.Errorf("ParseRuntime(%q) accepted", bad)
		}
	}
	if s, ok := ParseExecutionState("timeout"); !ok || s != ExecutionState_EXECUTION_STATE_TIMEOUT || s.Name() != "timeout" {
		t.Errorf("ParseExecutionState(timeout) = %v, %v", s, ok)
	}
	if _, ok := ParseExecutionState(""); ok {
		t.Error(`ParseExecutionState("") accepted`)
	}
	if n := TerminationReason_TERMINATION_REASON_OUTPUT_LIMIT.Name(); n != "output_limit" {
		t.Errorf("output limit reason named %q", n)
	}
}
