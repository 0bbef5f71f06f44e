package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// chunk is one stream chunk of a test: data at stream offset off.
type chunk struct {
	off  int64
	data string
}

// TestChunkWriter: the writer puts each byte of the stream out once and in
// order whatever offsets the chunks carry, and marks every gap with its
// size and offsets on note, and nothing else.
func TestChunkWriter(t *testing.T) {
	tests := []struct {
		name    string
		chunks  []chunk
		total   int64 // the outcome's stream bytes, given to finish
		want    string
		markers []string // lines on note, in order
	}{
		{"contiguous", []chunk{{0, "abc"}, {3, "def"}}, 6, "abcdef", nil},
		{"gap", []chunk{{0, "1\n2\n"}, {10, "6\n7\n"}}, 14, "1\n2\n6\n7\n",
			[]string{"execfarm: stdout: 6 bytes dropped here (offsets 4 to 10; the output limit keeps head and tail)"}},
		{"overlap", []chunk{{0, "abcd"}, {2, "cdef"}}, 6, "abcdef", nil},
		{"repeat", []chunk{{0, "abcd"}, {1, "bc"}, {4, "e"}}, 5, "abcde", nil},
		{"gap then overlap", []chunk{{0, "ab"}, {5, "fgh"}, {6, "ghij"}}, 10, "abfghij",
			[]string{"execfarm: stdout: 3 bytes dropped here (offsets 2 to 5; the output limit keeps head and tail)"}},
		{"gap at the end", []chunk{{0, "ab"}}, 7, "ab",
			[]string{"execfarm: stdout: 5 bytes dropped here (offsets 2 to 7; the output limit keeps head and tail)"}},
		{"first chunk past 0", []chunk{{4, "ef"}}, 6, "ef",
			[]string{"execfarm: stdout: 4 bytes dropped here (offsets 0 to 4; the output limit keeps head and tail)"}},
		// The server turned 2 invalid bytes into one U+FFFD (3 bytes): the
		// next chunk starts at raw offset 4, 1 byte below what the text
		// counts. That is neither a repeat nor a gap.
		{"U+FFFD then contiguous", []chunk{{0, "a\uFFFDb"}, {4, "cd"}}, 6, "a\uFFFDbcd", nil},
		// After U+FFFD a gap cannot be measured; a certain repeat (below
		// the lower bound) is still cut.
		{"U+FFFD then gap", []chunk{{0, "a\uFFFD"}, {9, "xy"}}, 11, "a\uFFFDxy", nil},
		{"U+FFFD then repeat", []chunk{{0, "ab\uFFFD"}, {1, "b"}, {3, "cd"}}, 5, "ab\uFFFDcd", nil},
		// Exact again after a chunk without U+FFFD.
		{"U+FFFD, exact, gap", []chunk{{0, "\uFFFD"}, {2, "cd"}, {6, "gh"}}, 8, "\uFFFDcdgh",
			[]string{"execfarm: stdout: 2 bytes dropped here (offsets 4 to 6; the output limit keeps head and tail)"}},
		// A server that sets no offsets (ProDisco's: every chunk at 0):
		// appended as they come, nothing marked, not even at the end.
		{"no offsets", []chunk{{0, "1\n"}, {0, "2\n"}, {0, "3\n"}}, 0, "1\n2\n3\n", nil},
		{"no offsets, outcome counts bytes", []chunk{{0, "ab"}, {0, "cd"}}, 9, "abcd", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, note strings.Builder
			c := &chunkWriter{name: "stdout", w: &out, note: &note}
			for _, ch := range tt.chunks {
				if err := c.writeText(ch.off, ch.data); err != nil {
					t.Fatal(err)
				}
			}
			c.finish(tt.total)
			if out.String() != tt.want {
				t.Errorf("wrote %q, want %q", out.String(), tt.want)
			}
			var lines []string
			if note.Len() > 0 {
				lines = strings.Split(strings.TrimSuffix(note.String(), "\n"), "\n")
			}
			if strings.Join(lines, "|") != strings.Join(tt.markers, "|") {
				t.Errorf("note %q, want %q", lines, tt.markers)
			}
		})
	}
}

// TestChunkWriterBytes: byte chunks (exec's) have exact lengths, U+FFFD
// or not: a gap after one is marked.
func TestChunkWriterBytes(t *testing.T) {
	var out, note strings.Builder
	c := &chunkWriter{name: "stderr", w: &out, note: &note}
	for _, ch := range []chunk{{0, "\uFFFD"}, {3, "x"}, {7, "y"}} {
		if err := c.writeBytes(ch.off, []byte(ch.data)); err != nil {
			t.Fatal(err)
		}
	}
	want, wantNote := "\uFFFDxy", "execfarm: stderr: 3 bytes dropped here (offsets 4 to 7; the output limit keeps head and tail)\n"
	if out.String() != want || note.String() != wantNote {
		t.Errorf("wrote %q and noted %q, want %q and %q", out.String(), note.String(), want, wantNote)
	}
}

// TestChunkWriterPages: GetExecution pages (status) mark the dropped
// middle the server says a page crosses, also when a page starts among
// the dropped bytes; a page that says nothing is written whole.
func TestChunkWriterPages(t *testing.T) {
	var out, note strings.Builder
	c := &chunkWriter{name: "stdout", w: &out, note: &note}
	pages := []struct {
		off             int64
		text            string
		dropped, gapIdx int64
	}{
		{0, "headtail", 10, 4}, // head [0,4), 10 dropped, tail [14,18)
		{18, "more", 0, 0},     // no gap
		{22, "end", 13, 0},     // starts among dropped bytes: [22,35) dropped, then [35,38)
	}
	for _, p := range pages {
		if err := c.writePage(p.off, p.text, p.dropped, p.gapIdx); err != nil {
			t.Fatal(err)
		}
	}
	want := "headtailmoreend"
	wantNote := "execfarm: stdout: 10 bytes dropped here (offsets 4 to 14; the output limit keeps head and tail)\n" +
		"execfarm: stdout: 13 bytes dropped here (offsets 22 to 35; the output limit keeps head and tail)\n"
	if out.String() != want || note.String() != wantNote || c.next != 38 {
		t.Errorf("wrote %q, noted %q, next %d; want %q, %q, 38", out.String(), note.String(), c.next, want, wantNote)
	}
}

// TestChunkWriterMarkerLine: a gap marker starts on a line of its own
// when the last byte either stream wrote to the shared terminal did not
// end a line, and adds no blank line when it did.
func TestChunkWriterMarkerLine(t *testing.T) {
	const marker = "execfarm: stdout: 2 bytes dropped here (offsets 3 to 5; the output limit keeps head and tail)\n"
	tests := []struct {
		name     string
		stdout   string // written at 0 before the gap
		stderr   string // then written to stderr at 0
		wantNote string
	}{
		{"stdout mid-line", "abc", "", "\n" + marker},
		{"stdout ended a line", "ab\n", "", marker},
		{"stderr ended the line after it", "abc", "e\n", "e\n" + marker},
		{"stderr mid-line after a full line", "ab\n", "e", "e\n" + marker},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, note strings.Builder
			line := new(lineState)
			o := &chunkWriter{name: "stdout", w: &out, note: &note, line: line}
			e := &chunkWriter{name: "stderr", w: &note, note: &note, line: line}
			if err := o.writeText(0, tt.stdout); err != nil {
				t.Fatal(err)
			}
			if err := e.writeText(0, tt.stderr); err != nil {
				t.Fatal(err)
			}
			if err := o.writeText(5, "fg\n"); err != nil {
				t.Fatal(err)
			}
			if note.String() != tt.wantNote {
				t.Errorf("stderr %q, want %q", note.String(), tt.wantNote)
			}
		})
	}
}

// fakeChunks is an ExecuteStream that returns its chunks, then io.EOF.
type fakeChunks []*sandboxv1.ExecuteChunk

func (f *fakeChunks) Recv() (*sandboxv1.ExecuteChunk, error) {
	if len(*f) == 0 {
		return nil, io.EOF
	}
	c := (*f)[0]
	*f = (*f)[1:]
	return c, nil
}

// TestCopyExecuteChunksTruncated: run's copy of a stream whose stdout
// passed its limit, with a gap and an overlap, writes each byte once in
// order, marks the gap, says the stream was truncated even without
// --verbose, and exits 137 (the program exited 0); the same stream
// without truncation exits 0 and says nothing.
func TestCopyExecuteChunksTruncated(t *testing.T) {
	out := func(off int64, s string) *sandboxv1.ExecuteChunk {
		return &sandboxv1.ExecuteChunk{Chunk: &sandboxv1.ExecuteChunk_Output{Output: s}, StreamOffset: off}
	}
	errOut := func(off int64, s string) *sandboxv1.ExecuteChunk {
		return &sandboxv1.ExecuteChunk{Chunk: &sandboxv1.ExecuteChunk_ErrorOutput{ErrorOutput: s}, StreamOffset: off}
	}
	result := func(success, truncated bool, stdoutBytes int64) *sandboxv1.ExecuteChunk {
		return &sandboxv1.ExecuteChunk{Chunk: &sandboxv1.ExecuteChunk_Result{Result: &sandboxv1.ExecuteResult{
			Success: success,
			State:   sandboxv1.ExecutionState_EXECUTION_STATE_COMPLETED,
			Outcome: &sandboxv1.ExecutionOutcome{
				TerminationReason: sandboxv1.TerminationReason_TERMINATION_REASON_EXITED,
				StdoutTruncated:   truncated, StdoutBytes: stdoutBytes, StderrBytes: 2,
				EffectiveLimits: &sandboxv1.ResourceLimits{MaxOutputBytes: 16},
			},
		}}}
	}
	t.Run("truncated", func(t *testing.T) {
		st := fakeChunks{out(0, "1\n2\n3\n4\n"), errOut(0, "e\n"), out(32, "17\n18\n"), out(35, "18\n19\n20\n"), result(false, true, 44)}
		var stdout, stderr strings.Builder
		err := copyExecuteChunks(&st, &stdout, &stderr, false)
		var ee exitError
		if !errors.As(err, &ee) || ee.code != exitLimit {
			t.Errorf("copyExecuteChunks = %v, want exit %d", err, exitLimit)
		}
		if want := "1\n2\n3\n4\n17\n18\n19\n20\n"; stdout.String() != want {
			t.Errorf("stdout %q, want %q", stdout.String(), want)
		}
		wantErr := "e\n" +
			"execfarm: stdout: 24 bytes dropped here (offsets 8 to 32; the output limit keeps head and tail)\n" +
			"execfarm: stdout truncated: of the 44 bytes the program wrote, the middle was dropped (head and tail kept; max_output_bytes 16)\n"
		if stderr.String() != wantErr {
			t.Errorf("stderr %q, want %q", stderr.String(), wantErr)
		}
	})
	t.Run("whole", func(t *testing.T) {
		st := fakeChunks{out(0, "1\n"), errOut(0, "e\n"), result(true, false, 2)}
		var stdout, stderr strings.Builder
		if err := copyExecuteChunks(&st, &stdout, &stderr, false); err != nil || stdout.String() != "1\n" || stderr.String() != "e\n" {
			t.Errorf("copyExecuteChunks = %v, stdout %q, stderr %q; want nil, %q, %q", err, stdout.String(), stderr.String(), "1\n", "e\n")
		}
	})
	t.Run("verbose", func(t *testing.T) {
		// The program wrote 4 bytes; 2 reached this client.
		st := fakeChunks{out(0, "1\n"), result(false, true, 4)}
		var stdout, stderr strings.Builder
		_ = copyExecuteChunks(&st, &stdout, &stderr, true)
		if strings.Count(stderr.String(), "stdout truncated") != 1 || !strings.Contains(stderr.String(), "reason exited") {
			t.Errorf("--verbose stderr %q: want the outcome and one truncation line", stderr.String())
		}
	})
	t.Run("kept in part, printed whole", func(t *testing.T) {
		// The server kept the stream in part; this client read all 4
		// bytes live: nothing was dropped for it.
		st := fakeChunks{out(0, "1\n"), errOut(0, "e\n"), out(2, "2\n"), result(false, true, 4)}
		var stdout, stderr strings.Builder
		if err := copyExecuteChunks(&st, &stdout, &stderr, false); err != nil || stdout.String() != "1\n2\n" || stderr.String() != "e\n" {
			t.Errorf("copyExecuteChunks = %v, stdout %q, stderr %q; want nil, %q, %q", err, stdout.String(), stderr.String(), "1\n2\n", "e\n")
		}
	})
	t.Run("no result", func(t *testing.T) {
		st := fakeChunks{out(0, "1\n")}
		var stdout, stderr strings.Builder
		var f failure
		if err := copyExecuteChunks(&st, &stdout, &stderr, false); !errors.As(err, &f) {
			t.Errorf("copyExecuteChunks = %v, want a failure", err)
		}
	})
}

// TestResultError: what run and exec say on stderr at the end: the
// server's error for an end that was not the program's own exit and for
// a program that could not be started (exit 126, nothing on its stderr),
// nothing for a program that exited by itself.
func TestResultError(t *testing.T) {
	exited := func(code int32, stderrBytes int64, msg string) *sandboxv1.ExecuteResult {
		return &sandboxv1.ExecuteResult{Error: &msg, State: sandboxv1.ExecutionState_EXECUTION_STATE_FAILED,
			Outcome: &sandboxv1.ExecutionOutcome{TerminationReason: sandboxv1.TerminationReason_TERMINATION_REASON_EXITED,
				ExitCode: code, StderrBytes: stderrBytes}}
	}
	notStarted := "start program: start /bin/sh: permission denied"
	timeout := exited(-1, 0, "Script execution timed out")
	timeout.Outcome.TerminationReason = sandboxv1.TerminationReason_TERMINATION_REASON_TIMEOUT
	tests := []struct {
		name string
		res  *sandboxv1.ExecuteResult
		want string
	}{
		{"not started", exited(126, 0, notStarted), notStarted},
		{"exited 126 saying why", exited(126, 20, "sh: ./x: Permission denied"), ""},
		{"exited 1 silently", exited(1, 0, "exited with code 1"), ""},
		{"timeout", timeout, "Script execution timed out"},
		{"success", &sandboxv1.ExecuteResult{Success: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resultError(tt.res); got != tt.want {
				t.Errorf("resultError = %q, want %q", got, tt.want)
			}
		})
	}
	// End to end through run's stream copy: the line, and exit 126.
	st := fakeChunks{{Chunk: &sandboxv1.ExecuteChunk_Result{Result: exited(126, 0, notStarted)}}}
	var stdout, stderr strings.Builder
	err := copyExecuteChunks(&st, &stdout, &stderr, false)
	var ee exitError
	if !errors.As(err, &ee) || ee.code != exitNotStarted || stderr.String() != "execfarm: "+notStarted+"\n" {
		t.Errorf("copyExecuteChunks = %v, stderr %q; want exit 126 and %q", err, stderr.String(), "execfarm: "+notStarted)
	}
}

// TestAsDelivered: a stream the server kept only in part but that the
// client wrote whole (it read every chunk live) is not truncated for the
// client, and a program that exited 0 then succeeded; a stream with a
// gap, or one whose offsets the client could not follow, stays
// truncated, and the execution failed.
func TestAsDelivered(t *testing.T) {
	outcome := func() *sandboxv1.ExecutionOutcome {
		return &sandboxv1.ExecutionOutcome{TerminationReason: sandboxv1.TerminationReason_TERMINATION_REASON_EXITED,
			StdoutTruncated: true, StdoutBytes: 6, StderrBytes: 0}
	}
	tests := []struct {
		name    string
		chunks  []chunk
		exit    int32
		trunc   bool // stdout truncated as delivered
		success bool
	}{
		{"whole", []chunk{{0, "abc"}, {3, "def"}}, 0, false, true},
		{"whole, exit 3", []chunk{{0, "abcdef"}}, 3, false, false},
		{"gap", []chunk{{0, "ab"}, {4, "ef"}}, 0, true, false},
		{"missing tail", []chunk{{0, "abc"}}, 0, true, false},
		{"no offsets", []chunk{{0, "abc"}, {0, "def"}}, 0, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w, note strings.Builder
			out := &chunkWriter{name: "stdout", w: &w, note: &note}
			errOut := &chunkWriter{name: "stderr", w: io.Discard, note: &note}
			for _, c := range tc.chunks {
				if err := out.writeText(c.off, c.data); err != nil {
					t.Fatal(err)
				}
			}
			o := outcome()
			o.ExitCode = tc.exit
			out.finish(o.GetStdoutBytes())
			errOut.finish(o.GetStderrBytes())
			seen := asDelivered(o, out, errOut)
			if seen.GetStdoutTruncated() != tc.trunc || !o.GetStdoutTruncated() {
				t.Errorf("stdout truncated as delivered %v (server's %v); want %v", seen.GetStdoutTruncated(), o.GetStdoutTruncated(), tc.trunc)
			}
			res := &sandboxv1.ExecuteResult{Outcome: o}
			if got := succeededAsDelivered(res, seen); got != tc.success {
				t.Errorf("succeeded as delivered = %v, want %v", got, tc.success)
			}
			var b strings.Builder
			printTruncation(&b, seen)
			if said := b.Len() > 0; said != tc.trunc {
				t.Errorf("truncation line %q; want one: %v", b.String(), tc.trunc)
			}
		})
	}
}
