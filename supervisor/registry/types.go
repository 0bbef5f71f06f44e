package registry

import "strconv"

// State is the state of an execution. The numbering matches
// prodisco.sandbox.v1.ExecutionState; the zero value is unspecified and is
// never the state of an execution held by a Registry.
type State int

// Execution states: StatePending → StateRunning → one terminal state.
const (
	StatePending   State = iota + 1 // queued, waiting for a sandbox
	StateRunning                    // running in a sandbox
	StateCompleted                  // ended; the program exited (see Result.ExitCode)
	StateFailed                     // ended with an error or a limit
	StateCancelled                  // ended by CancelExecution or a departed client
	StateTimeout                    // ended by the wall-clock timeout
)

// Terminal reports whether s is a terminal state (Completed, Failed,
// Cancelled, Timeout). Terminal states never change.
func (s State) Terminal() bool {
	return s >= StateCompleted && s <= StateTimeout
}

// String returns the lowercase name of s ("pending", "running", ...).
func (s State) String() string {
	switch s {
	case StatePending:
		return "pending"
	case StateRunning:
		return "running"
	case StateCompleted:
		return "completed"
	case StateFailed:
		return "failed"
	case StateCancelled:
		return "cancelled"
	case StateTimeout:
		return "timeout"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Reason says why an execution ended. The numbering matches
// prodisco.sandbox.v1.TerminationReason; the zero value means "not ended".
type Reason int

// Termination reasons, from DESIGN.md "Execution semantics".
const (
	ReasonExited      Reason = iota + 1 // the program exited by itself
	ReasonTimeout                       // wall-clock timeout
	ReasonCPUTime                       // CPU-time limit
	ReasonMemory                        // OOM kill in the sandbox cgroup (wins over SIGKILL)
	ReasonPids                          // the pids limit stopped the program
	ReasonOutputLimit                   // output limit reached and the request asked to stop
	ReasonCancelled                     // CancelExecution, or the streaming client went away
	ReasonSignal                        // killed by a signal
	ReasonInternal                      // execfarm failed (sandbox start-up, worker lost)
)

// String returns the lowercase wire name of r: "exited", "timeout",
// "cpu_time", "memory", "pids", "output_limit", "cancelled", "signal",
// "internal".
func (r Reason) String() string {
	switch r {
	case ReasonExited:
		return "exited"
	case ReasonTimeout:
		return "timeout"
	case ReasonCPUTime:
		return "cpu_time"
	case ReasonMemory:
		return "memory"
	case ReasonPids:
		return "pids"
	case ReasonOutputLimit:
		return "output_limit"
	case ReasonCancelled:
		return "cancelled"
	case ReasonSignal:
		return "signal"
	case ReasonInternal:
		return "internal"
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// Stream names one of an execution's two output streams. Each stream has its
// own buffer and its own offset space.
type Stream int

// Output streams.
const (
	Stdout Stream = iota
	Stderr
)

// String returns "stdout" or "stderr".
func (s Stream) String() string {
	switch s {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	}
	return "stream(" + strconv.Itoa(int(s)) + ")"
}

func (s Stream) valid() bool { return s == Stdout || s == Stderr }

// Usage is the resource usage of one execution, read from its sandbox cgroup.
// Zero in a field means "not measured".
type Usage struct {
	CPUUserMicros    int64  // CPU time in user mode, microseconds
	CPUSystemMicros  int64  // CPU time in kernel mode, microseconds
	WallMs           int64  // wall-clock run time, sandbox start excluded, milliseconds
	PeakMemoryBytes  int64  // peak memory of the sandbox cgroup, bytes
	PeakMemorySource string // where PeakMemoryBytes was read ("memory.peak", "memory.max_usage_in_bytes", ...); empty if not measured
	PidsPeak         int64  // highest number of tasks seen in the sandbox
	OOMKills         int64  // OOM kills counted in the sandbox cgroup
}

// Result.Error texts of the ends ProDisco's clients tell apart by their
// words (ProDisco's executor's): a wall-clock timeout, a cancel.
const (
	TimedOutText  = "Script execution timed out"
	CancelledText = "Execution was cancelled"
)

// Result is how an execution ended. The runner fills everything but the
// fields marked "set by the registry", which Finish overwrites.
type Result struct {
	State       State  // terminal state; Finish rejects a non-terminal one
	Reason      Reason // why it ended
	ExitCode    int    // exit status when Reason is ReasonExited
	Signal      int    // signal number that ended the program, 0 if none
	Error       string // error text for the caller, empty if none
	Success     bool   // runner's verdict; the registry ANDs it with State == StateCompleted and no truncation
	Usage       Usage  // resource usage from the sandbox cgroup
	QueueWaitMs int64  // time queued before a sandbox was assigned, milliseconds; 0 => the registry uses Start time minus creation time
	SandboxID   string // identity of the sandbox that ran the execution, empty if none
	Extra       any    // opaque to the registry, for the caller's own use; keep it small, its size is not counted
	// Attachment is bulk data the runner keeps with the result (a test
	// run's results channel), opaque to the registry but counted, with
	// the output, in the retention budget (Config.MaxBufferedBytes): past
	// it the registry drops old attachments (AttachmentDropped). Nil if
	// none.
	Attachment []byte

	AttachmentDropped bool  // set by the registry: Attachment was dropped after the end to keep the retention budget
	StdoutTruncated   bool  // set by the registry: stdout exceeded Meta.MaxOutputBytes, or was cut to its share of the retention budget after the end
	StderrTruncated   bool  // set by the registry: stderr exceeded Meta.MaxOutputBytes, or was cut to its share of the retention budget after the end
	StdoutBytes       int64 // set by the registry: total bytes written to stdout, dropped ones included
	StderrBytes       int64 // set by the registry: total bytes written to stderr, dropped ones included
}
