package shm

import (
	"testing"

	"github.com/ephpm/ephpm/internal/stackdepth"
)

// engine returns the view it is called on, wherever the stack grows: a
// pointer left at the view's old place, on a stack that is freed and
// handed to another goroutine, would make ApplyStep read and write that
// goroutine's frames (under checkptr, -race, if engine makes a call while
// it holds v's address as a uintptr).
func TestEngineKeepsTheViewAcrossStackGrowth(t *testing.T) {
	stackdepth.Sweep(t, "engine's view", engineOnStack)
}

//go:noinline
func engineOnStack() bool {
	var v stepView
	return v.engine().(*stepView) == &v
}
