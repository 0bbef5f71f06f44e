package execfarmv1

import "strings"

// This file is written by hand (protoc does not touch it): the names of
// the enums as the CLI and the MCP tools show them.

// Name returns seed 001's status names: "SandboxReady", "SandboxNotReady",
// "SandboxNotFound", or "" for SANDBOX_STATE_UNSPECIFIED.
func (x SandboxState) Name() string {
	switch x {
	case SandboxState_SANDBOX_STATE_READY:
		return "SandboxReady"
	case SandboxState_SANDBOX_STATE_NOT_READY:
		return "SandboxNotReady"
	case SandboxState_SANDBOX_STATE_NOT_FOUND:
		return "SandboxNotFound"
	}
	return ""
}

// Name returns "file", "directory", "symlink", "other" (seed 001's
// list_files types, and "other" for FIFOs, sockets and devices), or "" for
// FILE_TYPE_UNSPECIFIED.
func (x FileType) Name() string { return enumName(x.String(), "FILE_TYPE_") }

// Name returns "deleted", "expired", "idle", "shutdown", "failed", or ""
// for END_REASON_UNSPECIFIED.
func (x EndReason) Name() string { return enumName(x.String(), "END_REASON_") }

// Name returns "stdout", "stderr", or "" for OUTPUT_STREAM_UNSPECIFIED.
func (x OutputStream) Name() string { return enumName(x.String(), "OUTPUT_STREAM_") }

func enumName(s, prefix string) string {
	s = strings.ToLower(strings.TrimPrefix(s, prefix))
	if s == "unspecified" {
		return ""
	}
	return s
}
