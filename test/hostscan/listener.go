package hostscan

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Listener listens on the host's 127.0.0.1 until the test ends and counts
// the connections it accepts: a sandbox must never reach it.
func Listener(t testing.TB) (port int, accepted func() int64) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("host listener: %v", err)
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { lis.Close(); wg.Wait() })
	return lis.Addr().(*net.TCPAddr).Port, n.Load
}
