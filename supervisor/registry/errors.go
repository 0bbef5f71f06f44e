package registry

import "errors"

var (
	// ErrNotFound is returned for an execution id the registry does not hold
	// (never created, or already removed by retention).
	ErrNotFound = errors.New("registry: execution not found")
	// ErrTerminal is returned when an operation needs a non-terminal execution
	// (Start, Cancel) and the execution has already ended.
	ErrTerminal = errors.New("registry: execution is terminal")
	// ErrAlreadyStarted is returned by Start on an execution that is running.
	ErrAlreadyStarted = errors.New("registry: execution already started")
	// ErrInvalidOffset is returned for a negative output offset.
	ErrInvalidOffset = errors.New("registry: invalid output offset")
	// ErrInvalidStream is returned for a Stream other than Stdout or Stderr.
	ErrInvalidStream = errors.New("registry: invalid output stream")
)
