package supervisor

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/execfarm/execfarm/internal/utf8text"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/registry"
)

// chunkRecorder is an ExecuteStream server stream that keeps what is sent.
type chunkRecorder struct {
	grpc.ServerStream
	ctx    context.Context
	chunks []*sandboxv1.ExecuteChunk
}

func (r *chunkRecorder) Send(c *sandboxv1.ExecuteChunk) error {
	r.chunks = append(r.chunks, c)
	return nil
}

func (r *chunkRecorder) Context() context.Context { return r.ctx }

// TestStreamedTextIsExecutesText: ExecuteStream's chunks of a stream,
// joined, are Execute's output of it (utf8text's rule: a run of invalid
// bytes is one U+FFFD), where the registry's events cut a run of invalid
// bytes (after registry.MaxEventBytes) and a character: the run stays one
// U+FFFD, the character whole.
func TestStreamedTextIsExecutesText(t *testing.T) {
	const m = registry.MaxEventBytes
	raw := strings.Repeat("x", m-1) + "\xff\xfe" + // the first event ends after \xff
		strings.Repeat("y", m-2) + "€" + // the second would end after €'s first byte
		"a\xff\xfeb\xe2\x82c\xe2\x82" // the end, cut short
	want := strings.Repeat("x", m-1) + "\uFFFD" + strings.Repeat("y", m-2) + "€a\uFFFDb\uFFFDc\uFFFD"

	e := registry.New(registry.Config{}).Create(registry.Meta{Runtime: "shell", MaxOutputBytes: 4 << 20})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	e.Write(registry.Stdout, []byte(raw))
	e.Finish(registry.Result{State: registry.StateCompleted, Reason: registry.ReasonExited, Success: true})

	h, _, err := readHeads(context.Background(), e, false)
	if err != nil {
		t.Fatal(err)
	}
	if h.out != want {
		t.Fatalf("Execute's output differs from utf8text's rule (%d bytes, want %d)", len(h.out), len(want))
	}
	rec := &chunkRecorder{ctx: context.Background()}
	if err := streamOutput(rec.ctx, e, rec); err != nil {
		t.Fatal(err)
	}
	var joined strings.Builder
	var n int
	for _, c := range rec.chunks {
		if s, ok := c.GetChunk().(*sandboxv1.ExecuteChunk_Output); ok {
			joined.WriteString(s.Output)
			n++
		}
	}
	if n < 3 {
		t.Fatalf("%d output chunks: the events did not cut the stream where the test means", n)
	}
	if got := joined.String(); got != want {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("streamed text (%d bytes) differs from Execute's (%d bytes) at byte %d: %q, want %q",
			len(got), len(want), i, got[max(i-3, 0):min(i+6, len(got))], want[max(i-3, 0):min(i+6, len(want))])
	}
	if got := utf8text.String(raw); got != want {
		t.Fatalf("utf8text.String differs")
	}
}
