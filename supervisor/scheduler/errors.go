package scheduler

import (
	"errors"
	"fmt"

	"github.com/execfarm/execfarm/supervisor/budget"
)

// ErrQueueFull is wrapped by *FullError: no ticket may wait now.
var ErrQueueFull = errors.New("scheduler: queue full")

// FullError is an Enqueue refused because its ticket would have to wait
// and no place in the queue is free. It says why the queue's tickets wait
// (or, with QueueSize 0, why this one would have): every slot is held, or
// the memory of the queue's head does not fit the budget. It wraps
// ErrQueueFull.
type FullError struct {
	// Queued and QueueSize are the tickets waiting and the most that
	// may (Config.QueueSize; 0 = none may wait).
	Queued, QueueSize int
	// Running and MaxConcurrent are the slots held and the slots.
	Running, MaxConcurrent int
	// HeadMemoryBytes is the memory the queue's head waits for; 0 when
	// the queue is empty or its head takes none.
	HeadMemoryBytes int64
	// HeldBytes and BudgetBytes are the memory held of the budget and
	// its total, bytes; both 0 without a budget.
	HeldBytes, BudgetBytes int64
}

// SlotsBusy reports whether every slot is held: the queue waits for a
// slot; otherwise its head waits for memory.
func (e *FullError) SlotsBusy() bool { return e.Running >= e.MaxConcurrent }

func (e *FullError) Error() string { return "scheduler: " + e.Cause() }

// Cause says why the ticket was refused, naming the serve flags that set
// each bound: every slot busy with none allowed to wait, or a full queue
// waiting for a slot, or for its head's memory to fit the budget.
func (e *FullError) Cause() string {
	switch {
	case e.QueueSize == 0:
		return fmt.Sprintf("all %d execution slots are busy (--max-concurrent) and none may wait (--queue-size 0)", e.MaxConcurrent)
	case e.SlotsBusy():
		return fmt.Sprintf("execution queue full: %d executions wait (--queue-size) for one of the %d execution slots, all busy (--max-concurrent)",
			e.Queued, e.MaxConcurrent)
	default:
		return fmt.Sprintf("execution queue full: %d executions wait (--queue-size), the first for its memory limit of %s to fit the node's memory budget of %s (--memory-budget): live sandboxes hold %s",
			e.Queued, budget.Format(e.HeadMemoryBytes), budget.Format(e.BudgetBytes), budget.Format(e.HeldBytes))
	}
}

// Unwrap returns ErrQueueFull.
func (e *FullError) Unwrap() error { return ErrQueueFull }
