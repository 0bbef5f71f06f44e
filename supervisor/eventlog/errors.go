package eventlog

import (
	"errors"
	"fmt"
)

// Sentinel errors of a Log.
var (
	// ErrDropped is wrapped by every *DroppedError: the offset asked for
	// is no longer held.
	ErrDropped = errors.New("eventlog: offset dropped")
	// ErrOffsetAhead: the offset asked for has not been written yet (it
	// is past the next offset).
	ErrOffsetAhead = errors.New("eventlog: offset not written yet")
	// ErrClosed: Append on a closed log.
	ErrClosed = errors.New("eventlog: log closed")
	// ErrInvalidOffset: a negative offset.
	ErrInvalidOffset = errors.New("eventlog: negative offset")
)

// DroppedError says that Offset was dropped from the log (its bounds) and
// which offset is the first still held. It wraps ErrDropped.
type DroppedError struct {
	// Offset is the offset that was asked for (Read, Subscribe) or that a
	// subscriber needed next.
	Offset int64
	// First is the first offset the log still holds; reading from it
	// again resumes, having lost the entries in [Offset, First).
	First int64
}

func (e *DroppedError) Error() string {
	return fmt.Sprintf("eventlog: event offset %d was dropped (the log keeps its newest events); the first offset held is %d", e.Offset, e.First)
}

// Unwrap returns ErrDropped.
func (e *DroppedError) Unwrap() error { return ErrDropped }

// AheadError says that Offset is past Next, the next offset to be
// written. It wraps ErrOffsetAhead.
type AheadError struct {
	Offset, Next int64
}

func (e *AheadError) Error() string {
	return fmt.Sprintf("eventlog: event offset %d is not written yet (the next offset is %d)", e.Offset, e.Next)
}

// Unwrap returns ErrOffsetAhead.
func (e *AheadError) Unwrap() error { return ErrOffsetAhead }
