//go:build linux

package testbin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Serve is an `execfarm serve` process started by StartServe. Its stdout
// and stderr go to one log buffer.
type Serve struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	err     error // Wait's, once exited is closed
	mu      sync.Mutex
	log     bytes.Buffer
	changed chan struct{} // closed at the next Write; nil when nobody waits
	once    sync.Once
	stop    error
}

// StartServe starts the execfarm binary bin with args (serve and its
// flags) and a parent-death signal, so that a test killed with it leaves
// no supervisor behind.
func StartServe(bin string, args ...string) (*Serve, error) {
	return StartServeEnv(bin, nil, args...)
}

// StartServeEnv is StartServe with the environment env (nil: this
// process's).
func StartServeEnv(bin string, env []string, args ...string) (*Serve, error) {
	s := &Serve{exited: make(chan struct{})}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Env = env
	s.cmd.Stdout, s.cmd.Stderr = s, s
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// Write appends to the log (the process's stdout and stderr).
func (s *Serve) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return s.log.Write(p)
}

// Log returns the log's last max bytes (all with max <= 0).
func (s *Serve) Log(max int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.log.Bytes()
	if max > 0 && len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// Exited is closed when the process has exited.
func (s *Serve) Exited() <-chan struct{} { return s.exited }

// Pid returns the process id.
func (s *Serve) Pid() int { return s.cmd.Process.Pid }

// Stop sends SIGTERM and waits up to timeout for the exit, then kills
// it. It returns the exit's error (nil for status 0), or an error saying
// it had to be killed. Later calls return the first one's result.
func (s *Serve) Stop(timeout time.Duration) error {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
			s.stop = s.err
		case <-time.After(timeout):
			_ = s.cmd.Process.Kill()
			<-s.exited
			s.stop = errors.New("execfarm serve did not exit within " + timeout.String() + " of SIGTERM")
		}
	})
	return s.stop
}

// Kill kills the process with SIGKILL and waits for it; a later Stop
// returns nil.
func (s *Serve) Kill() error {
	var err error
	s.once.Do(func() {
		err = s.cmd.Process.Kill()
		<-s.exited
	})
	return err
}

// WaitLog waits up to timeout (or ctx) until the log holds s; it fails
// early when the process exits first.
func (s *Serve) WaitLog(ctx context.Context, substr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		s.mu.Lock()
		found := bytes.Contains(s.log.Bytes(), []byte(substr))
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		changed := s.changed
		s.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-changed:
		case <-s.exited:
			return fmt.Errorf("execfarm serve exited before logging %q:\n%s", substr, s.Log(4096))
		case <-ctx.Done():
			return fmt.Errorf("execfarm serve did not log %q within %v:\n%s", substr, timeout, s.Log(4096))
		}
	}
}
