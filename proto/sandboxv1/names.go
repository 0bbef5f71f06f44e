package sandboxv1

import "strings"

// This file is written by hand (protoc does not touch it): the names of
// the enums as the CLI and the MCP tool show and accept them, which is the
// value's proto name without its prefix, in lower case ("completed",
// "exited", "goja"). The UNSPECIFIED values are named "".

// Name returns "pending", "running", "completed", "failed", "cancelled",
// "timeout", or "" for EXECUTION_STATE_UNSPECIFIED.
func (x ExecutionState) Name() string { return enumName(x.String(), "EXECUTION_STATE_") }

// Name returns "exited", "timeout", "cpu_time", "memory", "pids",
// "output_limit", "cancelled", "signal", "internal", or "" for
// TERMINATION_REASON_UNSPECIFIED.
func (x TerminationReason) Name() string { return enumName(x.String(), "TERMINATION_REASON_") }

// Name returns "goja", "node", "shell", "python", or "" for
// RUNTIME_UNSPECIFIED (the server's default).
func (x Runtime) Name() string { return enumName(x.String(), "RUNTIME_") }

// ParseRuntime is Runtime.Name's inverse: "" is RUNTIME_UNSPECIFIED; ok is
// false for any other name that is not a runtime.
func ParseRuntime(name string) (r Runtime, ok bool) {
	return parseEnum[Runtime](name, "RUNTIME_", Runtime_value)
}

// ParseExecutionState is ExecutionState.Name's inverse, for a state that
// is not UNSPECIFIED.
func ParseExecutionState(name string) (s ExecutionState, ok bool) {
	if name == "" {
		return 0, false
	}
	return parseEnum[ExecutionState](name, "EXECUTION_STATE_", ExecutionState_value)
}

func enumName(s, prefix string) string {
	s = strings.ToLower(strings.TrimPrefix(s, prefix))
	if s == "unspecified" {
		return ""
	}
	return s
}

func parseEnum[E ~int32](name, prefix string, values map[string]int32) (E, bool) {
	if name == "" {
		return 0, true
	}
	if name != strings.ToLower(name) || name == "unspecified" {
		return 0, false
	}
	v, ok := values[prefix+strings.ToUpper(name)]
	return E(v), ok
}
