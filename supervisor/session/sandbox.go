package session

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/execfarm/execfarm/internal/quote"
	"github.com/execfarm/execfarm/isolation/cgroup"
	"github.com/execfarm/execfarm/supervisor/eventlog"
	"github.com/execfarm/execfarm/supervisor/limits"
)

// state is where a Sandbox is in its life.
type state int

const (
	stateReady  state = iota // serves execs and file operations
	stateEnding              // being deleted or expiring
	stateEnded               // destroyed; its log may still be read
)

// Sandbox is one session sandbox. Its methods are safe for concurrent
// use.
type Sandbox struct {
	m       *Manager
	id      string
	owner   string // principal.Principal.String()
	account string // the owner's principal.Principal.Unscoped().String(): its quota's key
	client  string // CreateParams.ScriptsClient: with account, the execs' script cache (cache.Owner)
	box     Box
	runtime string
	limits  limits.Set
	labels  map[string]string
	profile string
	created time.Time
	expires time.Time     // zero: no expiry
	idle    time.Duration // 0: no idle timeout
	log     *eventlog.Log[*Event]
	// subscribers counts its open subscriptions (Manager.Subscribe;
	// under the Manager's mu).
	subscribers int
	// ctx ends when the sandbox starts ending: file operations in
	// flight stop.
	ctx    context.Context
	cancel context.CancelFunc

	stdinHeld atomic.Int64 // unread stdin bytes of its execs (stdinBudget)

	mu           sync.Mutex
	state        state
	execs        map[string]*exec // admitted, not yet finished
	reserved     int              // exec places taken: Execs in progress and held execs
	fileOps      int              // file operations in flight
	lastActivity time.Time
	lifeTimer    *time.Timer
	idleTimer    *time.Timer
	cancelled    int           // execs that ended CANCELLED while the sandbox ended
	drained      chan struct{} // while ending: closed once reserved is 0
	endedAt      time.Time
	endReason    EndReason     // set with endedAt
	endMsg       string        // why, as its last event says
	cancelCause  string        // set as it starts ending: what its cancelled execs' results say (cancelCause)
	done         chan struct{} // closed once ended
}

// ID returns the sandbox's id: the node's kind of id (package nodeid),
// not its Box's, which names its cgroup and host directory.
func (s *Sandbox) ID() string { return s.id }

// Done returns a channel closed once the sandbox has ended and nothing
// of it is left.
func (s *Sandbox) Done() <-chan struct{} { return s.done }

// Info is a sandbox's status at one moment.
type Info struct {
	// ID is the sandbox's id; Box its Box's id (its cgroup's and host
	// directory's name: "sb-" and 16 hex digits).
	ID, Box string
	// Owner is the owning principal's key (principal.Principal.String).
	Owner string
	// Ready is true while the sandbox serves; Message says why not.
	Ready   bool
	Message string
	Labels  map[string]string
	// Runtime runs execs that name none.
	Runtime string
	// Profile is the sandbox profile it was created from (CreateParams).
	Profile string
	// Limits are the sandbox's.
	Limits limits.Set
	// Created is when it became ready; Expires when its lifetime ends
	// (zero: never).
	Created, Expires time.Time
	// IdleTimeout is 0 without one.
	IdleTimeout time.Duration
	// LastActivity is the end of the last exec or file operation, or
	// the creation.
	LastActivity time.Time
	// Usage is the whole sandbox's since it started (its cgroup); zero
	// when it cannot be read.
	Usage cgroup.Usage
	// Execs counts the execs pending or running.
	Execs int
	// FirstEvent and NextEvent bound the event log.
	FirstEvent, NextEvent int64
}

// Info returns the sandbox's status.
func (s *Sandbox) Info() Info {
	s.mu.Lock()
	in := Info{
		ID: s.id, Box: s.box.ID(), Owner: s.owner, Ready: s.state == stateReady, Labels: maps.Clone(s.labels),
		Runtime: s.runtime, Profile: s.profile, Limits: s.limits, Created: s.created, Expires: s.expires,
		IdleTimeout: s.idle, LastActivity: s.lastActivity, Execs: len(s.execs),
	}
	st := s.state
	s.mu.Unlock()
	switch {
	case st != stateReady:
		in.Message = "the sandbox is ending"
	case s.box.Exited():
		in.Ready, in.Message = false, "the sandbox's worker exited: it can serve nothing more; delete it"
	}
	if st != stateEnded {
		in.Usage, _ = s.box.Usage()
	}
	in.FirstEvent, in.NextEvent, _ = s.log.Bounds()
	return in
}

// usable returns an error unless the sandbox serves now.
func (s *Sandbox) usableLocked() error {
	if s.state != stateReady {
		return fmt.Errorf("sandbox %s is ending: %w", s.id, ErrNotReady)
	}
	if s.box.Exited() {
		return fmt.Errorf("sandbox %s: its worker exited; delete it: %w", s.id, ErrNotReady)
	}
	return nil
}

// appendEvent logs e; after the end (log closed) it is dropped.
func (s *Sandbox) appendEvent(e *Event) {
	_, _ = s.log.Append(e, e.size())
}

// beginFileOp counts a file operation in flight (it holds off the idle
// timeout) and returns an error when the sandbox does not serve.
func (s *Sandbox) beginFileOp() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	s.fileOps++
	s.armIdleLocked()
	return nil
}

func (s *Sandbox) endFileOp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fileOps--
	s.lastActivity = s.m.cfg.Now()
	s.armIdleLocked()
}

// armIdleLocked (re)arms the idle timer for the time the sandbox will
// have been idle long enough, or stops it while something is in flight.
func (s *Sandbox) armIdleLocked() {
	if s.idle <= 0 {
		return
	}
	if s.state != stateReady || s.reserved > 0 || s.fileOps > 0 {
		if s.idleTimer != nil {
			s.idleTimer.Stop()
		}
		return
	}
	d := s.lastActivity.Add(s.idle).Sub(s.m.cfg.Now())
	if s.idleTimer == nil {
		s.idleTimer = time.AfterFunc(d, func() { s.m.expire(s, EndIdle) })
		return
	}
	s.idleTimer.Reset(d)
}

// idleNow reports whether the sandbox has been idle for its idle timeout;
// if not, it re-arms the timer.
func (s *Sandbox) idleNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateReady || s.reserved > 0 || s.fileOps > 0 {
		return false
	}
	if s.m.cfg.Now().Sub(s.lastActivity) < s.idle {
		s.armIdleLocked()
		return false
	}
	return true
}

// end ends the sandbox for reason: it refuses new work, logs expiring
// (lifetime, idle), cancels its execs, kills everything in it, waits for
// the execs' results, destroys it, logs the end and closes the log. It
// returns how many execs ended CANCELLED, and false when the sandbox was
// already ending (another call ends it).
func (s *Sandbox) end(reason EndReason, msg string) (int, bool) {
	s.mu.Lock()
	if s.state != stateReady {
		s.mu.Unlock()
		return 0, false
	}
	s.state = stateEnding
	cause := cancelCause(reason, msg)
	s.cancelCause = cause
	for _, t := range []*time.Timer{s.lifeTimer, s.idleTimer} {
		if t != nil {
			t.Stop()
		}
	}
	held := make([]*exec, 0, len(s.execs))
	for _, x := range s.execs {
		held = append(held, x)
	}
	s.drained = make(chan struct{})
	if s.reserved == 0 {
		close(s.drained)
	}
	s.mu.Unlock()
	log := s.m.log.With("sandbox", s.id, "box", s.box.ID(), "owner", s.owner, "reason", reason.String())
	if reason == EndExpired || reason == EndIdle {
		s.appendEvent(&Event{Kind: EventExpiring, Reason: reason})
	}
	s.cancel()
	for _, x := range held {
		_, _ = x.e.CancelBecause(cause) // an exec that ended meanwhile says ErrTerminal
	}
	if err := s.box.Kill(); err != nil {
		log.Warn("kill session sandbox", "error", err)
	}
	select {
	case <-s.drained:
	case <-time.After(drainTimeout):
		log.Error("session sandbox: execs did not end after the kill; destroying it anyway", "timeout", drainTimeout)
	}
	if err := s.box.Close(); err != nil {
		log.Warn("destroy session sandbox", "error", err)
		s.m.cfg.Metrics.SandboxClosed(err)
		msg += "; destroy: " + err.Error()
	}
	s.mu.Lock()
	n := s.cancelled
	s.state = stateEnded
	s.endedAt = s.m.cfg.Now()
	s.endReason, s.endMsg = reason, msg
	s.mu.Unlock()
	// Counted and gone from the live ones before its last event: whoever
	// sees that event sees a sandbox that is no more.
	s.m.cfg.Metrics.SessionEnded(reason.String())
	s.m.endedSandbox(s)
	s.appendEvent(&Event{Kind: EventEnded, Reason: reason, CancelledExecs: n, Message: msg})
	s.log.Close()
	log.Info("session sandbox ended", "cancelled_execs", n)
	close(s.done)
	return n, true
}

// cancelCause is what the result of an exec that a sandbox's end (reason,
// msg: why, as its ended event says) cancelled adds to "Execution was
// cancelled" (registry.Execution.CancelBecause): that the sandbox
// expired, was deleted, or why else it ended.
func cancelCause(reason EndReason, msg string) string {
	switch reason {
	case EndExpired, EndIdle:
		return "the sandbox expired: " + msg
	case EndDeleted:
		return "the sandbox was deleted"
	}
	return "the sandbox ended: " + msg
}

// Bounds of labels.
const (
	maxLabels        = 32
	maxLabelKey      = 63
	maxLabelValue    = 255
	labelKeyAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-"
)

// checkLabels checks labels against the rules of CreateParams.Labels.
func checkLabels(labels map[string]string) error {
	if len(labels) > maxLabels {
		return &FieldError{Field: "labels", Reason: fmt.Sprintf("%d labels; at most %d", len(labels), maxLabels)}
	}
	for k, v := range labels {
		if k == "" || len(k) > maxLabelKey || strings.Trim(k, labelKeyAlphabet) != "" {
			return &FieldError{Field: "labels", Reason: fmt.Sprintf("key %s: want 1 to %d letters, digits, '.', '_', '/' or '-'", quote.Q(k), maxLabelKey)}
		}
		if len(v) > maxLabelValue || !utf8.ValidString(v) {
			return &FieldError{Field: "labels", Reason: fmt.Sprintf("value of %s: want at most %d bytes of UTF-8", quote.Q(k), maxLabelValue)}
		}
	}
	return nil
}

func cloneLabels(l map[string]string) map[string]string {
	if len(l) == 0 {
		return nil
	}
	return maps.Clone(l)
}

// hasLabels reports whether have carries every label of want.
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}
