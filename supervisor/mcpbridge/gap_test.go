package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// execSessions answers Exec with chunks; other methods panic through the
// embedded nil interface.
type execSessions struct {
	execfarmv1.SessionServiceClient
	chunks []*execfarmv1.ExecChunk
}

type execStream struct {
	grpc.ClientStream
	chunks []*execfarmv1.ExecChunk
}

func (s *execStream) Recv() (*execfarmv1.ExecChunk, error) {
	if len(s.chunks) == 0 {
		return nil, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

func (s *execStream) Header() (metadata.MD, error) { return nil, nil }

func (f *execSessions) Exec(context.Context, *execfarmv1.ExecRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[execfarmv1.ExecChunk], error) {
	return &execStream{chunks: f.chunks}, nil
}

// limited is a stream of written bytes as a sandbox with an output
// limit of limit bytes keeps it: the first limit/2 and the last
// limit-limit/2 bytes, as chunks of at most 64 KiB with their offsets.
func limited(stream string, limit int) (chunks []struct {
	data string
	off  int64
}) {
	add := func(s string, off int) {
		for len(s) > 0 {
			n := min(len(s), 64<<10)
			chunks = append(chunks, struct {
				data string
				off  int64
			}{s[:n], int64(off)})
			s, off = s[n:], off+n
		}
	}
	if len(stream) <= limit {
		add(stream, 0)
		return chunks
	}
	h := limit / 2
	add(stream[:h], 0)
	add(stream[len(stream)-(limit-h):], len(stream)-(limit-h))
	return chunks
}

// pattern is n characters that say where they are, so that an excerpt
// taken from the wrong place shows.
func pattern(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%d,", i)
	}
	return b.String()[:n]
}

// TestExecuteCommandPastTheOutputLimit: a stdout the sandbox's output
// limit cut is counted and cut as the whole stream would be by the
// seed's rule: stdout_total_chars is the bytes written, the marker's N
// counts the dropped bytes, and no note of the bridge's own is in the
// text (the red-team pass: a 1 500 000-character stdout with
// max_output_chars 300000 came back with totals of 1 212 478 and the
// like; a 10 000-character stdout past a 4096-byte limit with
// stdout_total_chars 4156 and "[... 5904 bytes dropped by the sandbox's
// output limit ...]" inside the text).
func TestExecuteCommandPastTheOutputLimit(t *testing.T) {
	cases := []struct {
		name          string
		chars, limit  int
		budget        int
		want          func(stream string) string
		wantTruncated bool
	}{
		{"1.5M past 1 MiB, budget 300000", 1_500_000, 1 << 20, MaxOutputChars, func(s string) string {
			o, _ := Budget(s, "", MaxOutputChars) // the excerpts lie within what was kept
			return o.Text
		}, true},
		{"10000 past 4096, default budget", 10_000, 4096, 0, func(s string) string {
			return s[:2048] + "\n[... 5904 characters omitted ...]\n" + s[len(s)-2048:]
		}, true},
		{"10000 past 4096, budget 1000", 10_000, 4096, 1000, func(s string) string {
			o, _ := Budget(s, "", 1000)
			return o.Text
		}, true},
		{"within the limit", 3000, 4096, 0, func(s string) string { return s }, false},
	}
	for _, c := range cases {
		stream := pattern(c.chars)
		f := &execSessions{}
		for _, ch := range limited(stream, c.limit) {
			f.chunks = append(f.chunks, &execfarmv1.ExecChunk{Chunk: &execfarmv1.ExecChunk_Stdout{Stdout: []byte(ch.data)}, StreamOffset: ch.off, ExecutionId: "e1"})
		}
		f.chunks = append(f.chunks, &execfarmv1.ExecChunk{Chunk: &execfarmv1.ExecChunk_Result{Result: &sandboxv1.ExecuteResult{Outcome: &sandboxv1.ExecutionOutcome{
			TerminationReason: sandboxv1.TerminationReason_TERMINATION_REASON_EXITED, StdoutBytes: int64(c.chars), StdoutTruncated: c.chars > c.limit,
		}}}})
		st := &sessionTools{client: f}
		out, _, err := st.execute(context.Background(), ExecuteCommandInput{SandboxClaimName: "sb", Command: "x", MaxOutputChars: c.budget})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if out.StdoutTotalChars != c.chars || out.StdoutTruncated != c.wantTruncated {
			t.Errorf("%s: stdout_total_chars %d, truncated %v; want %d, %v", c.name, out.StdoutTotalChars, out.StdoutTruncated, c.chars, c.wantTruncated)
		}
		if want := c.want(stream); out.Stdout != want {
			t.Errorf("%s: stdout of %d characters (%.80q ... %.80q), want %d (%.80q ... %.80q)", c.name,
				len(out.Stdout), out.Stdout, tail(out.Stdout, 80), len(want), want, tail(want, 80))
		}
		if strings.Contains(out.Stdout, "dropped") {
			t.Errorf("%s: the bridge's own note is in stdout", c.name)
		}
	}
}

func tail(s string, n int) string { return s[max(len(s)-n, 0):] }

// TestRunSandboxStreamPastTheOutputLimit: runSandbox's stream mode, whose
// chunks carry their offsets, cuts a stream past the output limit by the
// same rule as execute_command, with the marker where the bytes were
// dropped; execute mode, whose reply carries the kept bytes without the
// gap's place, counts the same totals.
func TestRunSandboxStreamPastTheOutputLimit(t *testing.T) {
	stream := pattern(10_000)
	f := &fakeClient{}
	for _, ch := range limited(stream, 4096) {
		f.chunks = append(f.chunks, &sandboxv1.ExecuteChunk{Chunk: &sandboxv1.ExecuteChunk_Output{Output: ch.data}, StreamOffset: ch.off})
	}
	cut := &sandboxv1.ExecutionOutcome{StdoutTruncated: true, StdoutBytes: 10_000,
		TerminationReason: sandboxv1.TerminationReason_TERMINATION_REASON_EXITED, EffectiveLimits: &sandboxv1.ResourceLimits{MaxOutputBytes: 4096}}
	f.chunks = append(f.chunks, &sandboxv1.ExecuteChunk{Chunk: &sandboxv1.ExecuteChunk_Result{Result: &sandboxv1.ExecuteResult{Success: true,
		State: sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED, Outcome: cut}}})
	f.execute = &sandboxv1.ExecuteResponse{Success: true, Output: stream[:2048] + stream[len(stream)-2048:],
		State: sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED, Outcome: cut}
	cs := session(t, f, nil)
	out, _ := call(t, cs, map[string]any{"code": "x", "runtime": "shell", "mode": "stream"}, nil)
	if want := stream[:2048] + "\n[... 5904 characters omitted ...]\n" + stream[len(stream)-2048:]; out.Output != want || *out.OutputTotalChars != 10_000 || !out.OutputTruncated {
		b, _ := json.Marshal(out)
		t.Errorf("stream: %.300s", b)
	}
	out, _ = call(t, cs, map[string]any{"code": "x", "runtime": "shell"}, nil)
	if *out.OutputTotalChars != 10_000 || !out.OutputTruncated || !strings.Contains(out.Output, "[... 5904 characters omitted ...]") {
		b, _ := json.Marshal(out)
		t.Errorf("execute: %.300s", b)
	}
}
