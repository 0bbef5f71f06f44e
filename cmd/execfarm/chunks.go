package main

import (
	"bytes"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// replacementChar is U+FFFD in UTF-8: what the server puts in a text
// chunk (ExecuteChunk.output, error_output) for a run of invalid bytes.
var replacementChar = []byte("\uFFFD")

// chunkWriter copies one output stream of an execution to w from chunks
// that each carry their byte offset in the stream (stream_offset: the
// program's raw bytes, counted from 0), so that what w gets is the
// stream's kept bytes in order, each at most once:
//
//   - A chunk that starts past what was written follows bytes that never
//     reached this client: the server keeps the head and the tail of a
//     stream past max_output_bytes and drops the middle, also from under
//     a subscriber that fell behind. A line on note says how many bytes,
//     at which offsets, before the chunk is written.
//   - A chunk that starts before it repeats bytes already written: that
//     part is left out (the server sends each kept byte once; this is
//     defence, not a case it produces).
//
// Byte chunks (ExecChunk) have exact lengths. In a text chunk every run
// of invalid UTF-8 became one U+FFFD (3 bytes, standing for at least
// one), so after a text chunk that holds U+FFFD only a lower bound of
// the next offset is known: a gap after it cannot be measured and is
// not marked (finish's line and the outcome's truncation flags still
// tell), and a repeat is cut at most up to the first U+FFFD, so that
// a byte is written twice rather than lost.
//
// A server that sets no offsets (ProDisco's own: stream_offset is an
// execfarm extension, 0 in every chunk) is written in append mode: a
// chunk at offset 0 after bytes were written cannot be a repeat from a
// server that sends each kept byte once, so from then on every chunk is
// written whole, in the order it came, and nothing is marked.
//
// A marker line starts on a line of its own: when the last byte written
// to the terminal the streams share (line) did not end a line, a newline
// goes to note first.
//
// The zero value is not ready: name, w and note must be set; line may be
// nil (markers are then written as they are).
type chunkWriter struct {
	name string     // "stdout" or "stderr", in the marker lines
	w    io.Writer  // the stream's bytes
	note io.Writer  // marker lines (this command's stderr)
	line *lineState // shared by an execution's two writers; nil: not tracked

	next      int64 // stream offset just past the bytes written: exact, or a lower bound when approx
	approx    bool  // next is a lower bound (a text chunk with U+FFFD)
	noOffsets bool  // the server sets no offsets: write chunks as they come
	// dropped is the bytes the markers have reported missing so far.
	dropped int64
}

// writeText writes a text chunk (ExecuteChunk) that starts at stream
// offset off. Errors are w's.
func (c *chunkWriter) writeText(off int64, s string) error {
	p := []byte(s)
	k := int64(bytes.Count(p, replacementChar))
	return c.write(off, p, int64(len(p))-2*k, k == 0)
}

// writeBytes writes a byte chunk (ExecChunk) that starts at stream
// offset off. Errors are w's.
func (c *chunkWriter) writeBytes(off int64, p []byte) error {
	return c.write(off, p, int64(len(p)), true)
}

// write writes p, whose raw length in the stream is raw (exactly when
// exact, else at least raw), starting at stream offset off.
func (c *chunkWriter) write(off int64, p []byte, raw int64, exact bool) error {
	if off == 0 && c.next > 0 {
		c.noOffsets = true
	}
	switch {
	case c.noOffsets:
	case off > c.next && !c.approx:
		c.mark(off)
	case off < c.next:
		n := c.next - off // bytes of p already written (at least, when approx)
		if i := bytes.Index(p, replacementChar); !exact && i >= 0 && int64(i) < n {
			n = int64(i) // past the first U+FFFD, text and raw offsets part
		}
		p = p[min(n, int64(len(p))):]
	}
	if end := off + raw; end > c.next {
		c.next, c.approx = end, !exact
	}
	if len(p) == 0 {
		return nil
	}
	if c.line != nil {
		c.line.mid = p[len(p)-1] != '\n'
	}
	_, err := c.w.Write(p)
	return err
}

// writePage writes one GetExecution page of the stream, text read from
// stream offset off, across the dropped middle of a stream past
// max_output_bytes that the server says it crosses: dropped bytes lie
// between text[:gapIndex] and the rest (output_dropped_bytes,
// output_gap_index; dropped 0: no gap, or a server that does not say).
// The gap is marked like a gap between chunks. Errors are w's.
func (c *chunkWriter) writePage(off int64, text string, dropped, gapIndex int64) error {
	if dropped <= 0 || gapIndex < 0 || gapIndex > int64(len(text)) {
		return c.writeText(off, text)
	}
	if err := c.writeText(off, text[:gapIndex]); err != nil {
		return err
	}
	if c.next < off {
		c.next, c.approx = off, false // the page started among the dropped bytes
	}
	c.mark(c.next + dropped)
	return c.writeText(c.next, text[gapIndex:])
}

// finish marks the bytes missing at the end of a stream of total bytes
// (outcome.stdout_bytes, stderr_bytes), when that can be known (not in
// append mode: the chunks said no offsets).
func (c *chunkWriter) finish(total int64) {
	if total > c.next && !c.approx && !c.noOffsets {
		c.mark(total)
	}
}

// lineState is whether the last byte written to a terminal shared by an
// execution's stdout and stderr ended a line. Its zero value says it did
// (nothing was written).
type lineState struct{ mid bool }

// mark says on note, on a line of its own, that the stream's bytes from
// c.next up to off never came, and moves c.next to off.
func (c *chunkWriter) mark(off int64) {
	if c.line != nil && c.line.mid {
		fmt.Fprintln(c.note)
		c.line.mid = false
	}
	fmt.Fprintf(c.note, "execfarm: %s: %d bytes dropped here (offsets %d to %d; the output limit keeps head and tail)\n",
		c.name, off-c.next, c.next, off)
	c.dropped += off - c.next
	c.next = off
}

// printTruncation says on w which of an execution's streams were
// truncated (outcome.stdout_truncated, stderr_truncated: past
// max_output_bytes, or cut later to the server's retention budget), with
// the bytes the program wrote and the limit; nothing when none was.
func printTruncation(w io.Writer, o *sandboxv1.ExecutionOutcome) {
	limit := o.GetEffectiveLimits().GetMaxOutputBytes()
	for _, s := range []struct {
		name      string
		truncated bool
		written   int64
	}{
		{"stdout", o.GetStdoutTruncated(), o.GetStdoutBytes()},
		{"stderr", o.GetStderrTruncated(), o.GetStderrBytes()},
	} {
		if !s.truncated {
			continue
		}
		fmt.Fprintf(w, "execfarm: %s truncated: of the %d bytes the program wrote, the middle was dropped (head and tail kept; max_output_bytes %d)\n",
			s.name, s.written, limit)
	}
}

// whole reports whether c wrote every byte of a stream of total bytes:
// offsets known exactly (not approx, not in append mode) and no gap
// marked.
func (c *chunkWriter) whole(total int64) bool {
	return !c.noOffsets && !c.approx && c.dropped == 0 && c.next >= total
}

// asDelivered returns o as this client received the output: a stream
// the server kept only in part (its middle dropped past
// max_output_bytes) that out or errOut nonetheless wrote whole, because
// the client read it live as it was written, is not truncated here.
// Whether such a stream was truncated decides the exit status (137 for
// a program that exited 0) and the "truncated" line, which would
// otherwise say bytes were dropped after every byte had been printed.
// o itself is not changed.
func asDelivered(o *sandboxv1.ExecutionOutcome, out, errOut *chunkWriter) *sandboxv1.ExecutionOutcome {
	stdout := o.GetStdoutTruncated() && !out.whole(o.GetStdoutBytes())
	stderr := o.GetStderrTruncated() && !errOut.whole(o.GetStderrBytes())
	if stdout == o.GetStdoutTruncated() && stderr == o.GetStderrTruncated() {
		return o
	}
	d := proto.CloneOf(o)
	d.StdoutTruncated, d.StderrTruncated = stdout, stderr
	return d
}

// succeededAsDelivered is res's success as this client received its
// output (seen, from asDelivered): also true for a program that exited 0
// whose only fault was output the server kept in part and this client
// got whole.
func succeededAsDelivered(res *sandboxv1.ExecuteResult, seen *sandboxv1.ExecutionOutcome) bool {
	o := res.GetOutcome()
	return res.GetSuccess() ||
		o.GetTerminationReason() == sandboxv1.TerminationReason_TERMINATION_REASON_EXITED && o.GetExitCode() == 0 &&
			(o.GetStdoutTruncated() || o.GetStderrTruncated()) && !seen.GetStdoutTruncated() && !seen.GetStderrTruncated()
}
