package execfarmv1

import "testing"

func TestNames(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{SandboxState_SANDBOX_STATE_READY.Name(), "SandboxReady"},
		{SandboxState_SANDBOX_STATE_NOT_READY.Name(), "SandboxNotReady"},
		{SandboxState_SANDBOX_STATE_NOT_FOUND.Name(), "SandboxNotFound"},
		{SandboxState_SANDBOX_STATE_UNSPECIFIED.Name(), ""},
		{FileType_FILE_TYPE_DIRECTORY.Name(), "directory"},
		{FileType_FILE_TYPE_SYMLINK.Name(), "symlink"},
		{EndReason_END_REASON_EXPIRED.Name(), "expired"},
		{OutputStream_OUTPUT_STREAM_STDERR.Name(), "stderr"},
		{OutputStream_OUTPUT_STREAM_UNSPECIFIED.Name(), ""},
	} {
		if tt.got != tt.want {
			t.Errorf("Name() = %q, want %q", tt.got, tt.want)
		}
	}
}
