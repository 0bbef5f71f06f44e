package goja

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// flushDelay bounds how long written output may sit in a buffer while the
// script keeps running without going idle.
const flushDelay = 50 * time.Millisecond

// streamBufferBytes is the buffer size of each output stream.
const streamBufferBytes = 32 << 10

// stream is a buffered writer that is flushed on demand, flushDelay after
// the first unflushed write, and on Close. It is safe for concurrent use:
// the delayed flush runs on a timer goroutine.
type stream struct {
	mu      sync.Mutex
	w       *bufio.Writer
	timer   *time.Timer
	pending sync.WaitGroup // a delayed flush that is armed or running
	armed   bool
	closed  bool
}

func newStream(w io.Writer) *stream {
	return &stream{w: bufio.NewWriterSize(w, streamBufferBytes)}
}

// WriteString buffers s. Write errors of the underlying writer are dropped:
// a program must not fail because its reader went away.
func (s *stream) WriteString(str string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	_, _ = s.w.WriteString(str)
	if s.w.Buffered() > 0 && !s.armed {
		s.armed = true
		s.pending.Add(1)
		s.timer = time.AfterFunc(flushDelay, s.delayedFlush)
	}
}

func (s *stream) delayedFlush() {
	defer s.pending.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
	_ = s.w.Flush()
}

// Flush writes buffered output to the underlying writer now.
func (s *stream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.w.Flush()
}

// Close flushes and stops the delayed flush; later writes are dropped. It
// returns once no timer goroutine of s is left.
func (s *stream) Close() {
	s.mu.Lock()
	s.closed = true
	if s.armed && s.timer.Stop() {
		s.armed = false
		s.pending.Done()
	}
	_ = s.w.Flush()
	s.mu.Unlock()
	s.pending.Wait()
}
