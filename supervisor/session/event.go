package session

import (
	"github.com/execfarm/execfarm/supervisor/registry"
)

// EventKind says what an Event is.
type EventKind int

// Event kinds, in the order a sandbox's life produces them.
const (
	// EventReady is a sandbox's first event.
	EventReady EventKind = iota + 1
	// EventExecStarted: an exec was admitted (before any of its output).
	EventExecStarted
	// EventExecOutput: a chunk of an exec's output.
	EventExecOutput
	// EventExecEnded: an exec ended (after all its output).
	EventExecEnded
	// EventFileWritten: an upload completed.
	EventFileWritten
	// EventFileRemoved: a path was removed.
	EventFileRemoved
	// EventDirectoryMade: a directory was created.
	EventDirectoryMade
	// EventExpiring: the sandbox is about to end on its own (lifetime or
	// idle timeout); its execs are cancelled next.
	EventExpiring
	// EventEnded is a sandbox's last event: it is destroyed.
	EventEnded
	// EventFileMoved: a path was moved (Path, to Destination); numbered
	// after the others, which it came later than.
	EventFileMoved
)

// EndReason says why a sandbox ended.
type EndReason int

// End reasons; the numbering matches execfarm.v1.EndReason.
const (
	EndDeleted  EndReason = iota + 1 // DeleteSandbox
	EndExpired                       // its lifetime passed
	EndIdle                          // its idle timeout passed
	EndShutdown                      // the supervisor shut down
	EndFailed                        // its worker was lost
)

// String returns "deleted", "expired", "idle", "shutdown" or "failed".
func (r EndReason) String() string {
	switch r {
	case EndDeleted:
		return "deleted"
	case EndExpired:
		return "expired"
	case EndIdle:
		return "idle"
	case EndShutdown:
		return "shutdown"
	case EndFailed:
		return "failed"
	}
	return "unknown"
}

// Event is one entry of a sandbox's event log. Which fields are set
// depends on Kind; an Event never changes once logged (readers share it).
type Event struct {
	Kind EventKind
	// ExecutionID names the exec (EventExec*).
	ExecutionID string
	// Runtime, CodePreview and Workdir describe a started exec.
	Runtime, CodePreview, Workdir string
	// Stream, Data and StreamOffset are a chunk of output: Data starts
	// at byte StreamOffset of Stream.
	Stream       registry.Stream
	Data         []byte
	StreamOffset int64
	// Result is how an exec ended (EventExecEnded).
	Result registry.Result
	// Path is the absolute path in the sandbox (EventFile*,
	// EventDirectoryMade); Size the bytes written (EventFileWritten).
	Path string
	Size int64
	// Destination is where Path was moved to (EventFileMoved).
	Destination string
	// Reason is why the sandbox ends (EventExpiring, EventEnded).
	Reason EndReason
	// CancelledExecs counts the execs that were pending or running when
	// the sandbox ended, which ended CANCELLED (EventEnded).
	CancelledExecs int
	// Message says more of the end (EventEnded).
	Message string
}

// eventOverhead is what an Event counts against the log's byte bound
// besides its data: its fields and bookkeeping, roughly.
const eventOverhead = 128

// size is what e counts against the log's byte bound.
func (e *Event) size() int64 {
	return eventOverhead + int64(len(e.Data)+len(e.CodePreview)+len(e.Path)+len(e.Destination)+len(e.Workdir)+len(e.Message)+len(e.Result.Error))
}
