package transport

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestFramedConnTracking: framedConn tracks the streams whose request
// is still to come, and only those: a call whose headers end its stream
// is not tracked; a stream whose call ended is forgotten when room is
// needed, the prefix it held handed on; a live stream is never
// forgotten (its DATA would pass unparsed): past maxTrackedStream live
// ones the connection fails.
func TestFramedConnTracking(t *testing.T) {
	b := &recvBudget{max: 1 << 20, perConn: 1 << 20}
	var in bytes.Buffer
	in.WriteString(http2Preface)
	fr := http2.NewFramer(&in, nil)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	headers := func(id uint32, end bool) {
		hb.Reset()
		_ = enc.WriteField(hpack.HeaderField{Name: ":path", Value: "/x/Y"})
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: end}); err != nil {
			t.Fatal(err)
		}
	}
	f := &framedConn{Conn: readConn{&in}, prefaceLeft: len(http2Preface), streams: map[uint32]*framedStream{}, acct: b.account()}
	limits := map[uint32]*callLimit{}
	limitOf := func(id uint32) *callLimit {
		l := &callLimit{method: "/x/Y", limit: 1000, acct: f.acct}
		limits[id] = l
		return l
	}

	// A call without a body: nothing of it is to come.
	headers(1, true)
	pump(t, f, limitOf)
	if len(f.streams) != 0 {
		t.Fatalf("a call whose headers end its stream is tracked (%d streams)", len(f.streams))
	}
	// Stream 3 holds 3 bytes of a prefix; its call ends.
	headers(3, false)
	if err := fr.WriteData(3, false, msgPrefix(100)[:3]); err != nil {
		t.Fatal(err)
	}
	pump(t, f, limitOf)
	limits[3].finish()
	// Live streams up to the bound, then one more: stream 3 goes, its
	// 3 bytes to where flow control counts them.
	id := uint32(5)
	for len(f.streams) < maxTrackedStream {
		headers(id, false)
		id += 2
		pump(t, f, limitOf)
	}
	headers(id, false)
	id += 2
	out := pump(t, f, limitOf)
	if f.streams[3] != nil || len(f.streams) != maxTrackedStream {
		t.Fatalf("the ended stream is still tracked (%d streams)", len(f.streams))
	}
	if want := append([]byte{0, 0, 3, frameData, 0, 0, 0, 0, deadStreamID}, msgPrefix(100)[:3]...); !bytes.Contains(out, want) {
		t.Fatalf("the ended stream's held prefix was not handed on: % x", out)
	}
	// Every tracked stream is live: the next fails the connection.
	headers(id, false)
	buf := make([]byte, 64<<10)
	var err error
	for err == nil {
		_, err = f.Read(buf)
		if f.block != 0 && f.pending == nil {
			f.pending = limitOf(f.block)
		}
	}
	if errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "streams") {
		t.Fatalf("a stream past %d live ones: %v, want the connection failed", maxTrackedStream, err)
	}
	for sid, st := range f.streams {
		if st.l.done.Load() {
			t.Fatalf("stream %d evicted a live one", sid)
		}
	}
	if len(f.streams) != maxTrackedStream {
		t.Fatalf("%d streams tracked, want %d", len(f.streams), maxTrackedStream)
	}
}

// TestLiveStreamStaysLimited: calls that end without the limit's
// interceptor (an unknown method, UNIMPLEMENTED; a deadline of 0) and
// without their client ending their stream cannot push a live call out
// of framedConn's tracking: a health Check opened first and sent 200
// KiB after 520 of them is still refused RESOURCE_EXHAUSTED as the
// message arrives.
func TestLiveStreamStaysLimited(t *testing.T) {
	c, b := serveBudget(t, Config{Token: goodToken}, &sizes{})
	fc := dialFrames(t, c.SocketPath)
	fc.headers(1, healthpb.Health_Check_FullMethodName, false)
	id := uint32(3)
	for i := range maxTrackedStream + 8 {
		if i%2 == 0 {
			fc.headers(id, "/grpc.health.v1.Health/Nope", false)
		} else {
			fc.headers(id, healthpb.Health_Check_FullMethodName, false, "grpc-timeout", "0n")
		}
		if s := fc.end(id); s == "" {
			t.Fatalf("stream %d did not end", id)
		}
		id += 2
	}
	msg := framed(t, &healthpb.HealthCheckRequest{Service: strings.Repeat("s", 200<<10)})
	fc.send(1, msg, true)
	if s := fc.end(1); !strings.Contains(s, "grpc-status=8") || !strings.Contains(s, "takes request messages of at most") {
		t.Fatalf("a 200 KiB health check after %d ended calls: %q, want RESOURCE_EXHAUSTED naming the bound", maxTrackedStream+8, s)
	}
	fc.sync()
	if n := b.used.Load(); n != 0 {
		t.Fatalf("%d bytes of the receive budget held once every call ended", n)
	}
}
