package transport

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// frameClient is an HTTP/2 client written frame by frame, for tests
// that open streams and send prefixes as no gRPC client would. It keeps
// the flow-control windows the server grants and the end of each
// stream.
type frameClient struct {
	t   *testing.T
	nc  net.Conn
	wmu sync.Mutex // the framer's writes
	fr  *http2.Framer

	mu     sync.Mutex
	cond   *sync.Cond
	closed bool
	conn   int64            // the connection's send window
	window map[uint32]int64 // each stream's send window
	ended  map[uint32]string
	pings  int // PING acks read
}

func dialFrames(t *testing.T, sock string) *frameClient {
	t.Helper()
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &frameClient{t: t, nc: nc, conn: 65535, window: map[uint32]int64{}, ended: map[uint32]string{}}
	c.cond = sync.NewCond(&c.mu)
	if _, err := nc.Write([]byte(http2Preface)); err != nil {
		t.Fatal(err)
	}
	c.fr = http2.NewFramer(nc, nc)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	go c.readLoop()
	return c
}

func (c *frameClient) readLoop() {
	for {
		f, err := c.fr.ReadFrame()
		c.mu.Lock()
		if err != nil {
			c.closed = true
			c.cond.Broadcast()
			c.mu.Unlock()
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.wmu.Lock()
				_ = c.fr.WriteSettingsAck()
				c.wmu.Unlock()
			}
		case *http2.PingFrame:
			if f.IsAck() {
				c.pings++
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				c.conn += int64(f.Increment)
			} else {
				c.window[f.StreamID] += int64(f.Increment)
			}
		case *http2.MetaHeadersFrame:
			if f.StreamEnded() {
				var st, msg string
				for _, hf := range f.Fields {
					switch hf.Name {
					case "grpc-status":
						st = hf.Value
					case "grpc-message":
						msg = hf.Value
					}
				}
				c.ended[f.StreamID] = "grpc-status=" + st + " " + msg
			}
		case *http2.RSTStreamFrame:
			if _, ok := c.ended[f.StreamID]; !ok {
				c.ended[f.StreamID] = "rst " + f.ErrCode.String()
			}
		}
		c.cond.Broadcast()
		c.mu.Unlock()
	}
}

// wait waits, c.mu held, until cond holds or d passes; it reports
// whether cond holds.
func (c *frameClient) wait(d time.Duration, cond func() bool) bool {
	timedOut := false
	timer := time.AfterFunc(d, func() {
		c.mu.Lock()
		timedOut = true
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer timer.Stop()
	for !cond() {
		if timedOut || c.closed {
			return cond()
		}
		c.cond.Wait()
	}
	return true
}

// headers opens stream id, a call of method with more headers (name,
// value pairs).
func (c *frameClient) headers(id uint32, method string, endStream bool, more ...string) {
	var hb bytes.Buffer
	e := hpack.NewEncoder(&hb)
	fields := append([]string{":method", "POST", ":scheme", "http", ":path", method, ":authority", "x", "content-type", "application/grpc", "te", "trailers"}, more...)
	for i := 0; i < len(fields); i += 2 {
		_ = e.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	c.mu.Lock()
	c.window[id] += WindowBytes
	c.mu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: endStream}); err != nil {
		c.t.Error(err)
	}
}

// send writes b on stream id as its windows allow, until it is all
// sent or the stream or connection ends (it reports which).
func (c *frameClient) send(id uint32, b []byte, end bool) bool {
	for {
		c.mu.Lock()
		var n int64
		ok := c.wait(time.Minute, func() bool {
			n = min(c.conn, c.window[id], int64(len(b)), maxFrameLen)
			_, ended := c.ended[id]
			return n > 0 || len(b) == 0 || ended
		})
		if _, ended := c.ended[id]; !ok || ended || c.closed {
			c.mu.Unlock()
			return false
		}
		c.conn -= n
		c.window[id] -= n
		c.mu.Unlock()
		last := end && int(n) == len(b)
		c.wmu.Lock()
		err := c.fr.WriteData(id, last, b[:n])
		c.wmu.Unlock()
		if err != nil {
			return false
		}
		b = b[n:]
		if len(b) == 0 && (!end || last) {
			return true
		}
	}
}

// sync returns once the server has read everything sent before it: its
// reader answers a PING after the frames before it.
func (c *frameClient) sync() {
	c.t.Helper()
	c.mu.Lock()
	want := c.pings + 1
	c.mu.Unlock()
	c.wmu.Lock()
	err := c.fr.WritePing(false, [8]byte{1})
	c.wmu.Unlock()
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.wait(20*time.Second, func() bool { return c.pings >= want }) {
		c.t.Fatal("no PING ack")
	}
}

// end waits for stream id's end and returns its status ("grpc-status=N
// message", "rst CODE", or "" when it did not end in 20 s).
func (c *frameClient) end(id uint32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wait(20*time.Second, func() bool { _, ok := c.ended[id]; return ok })
	return c.ended[id]
}

// msgPrefix is a gRPC message prefix declaring n bytes.
func msgPrefix(n uint32) []byte {
	p := make([]byte, grpcPrefixLen)
	binary.BigEndian.PutUint32(p[1:], n)
	return p
}
