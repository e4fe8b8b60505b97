package backend_test

import (
	"testing"
	"unsafe"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/internal/stackdepth"
)

// passed is the address of the Step that recordStepper's Step was given.
var passed uintptr

type recordStepper struct{}

func (recordStepper) Step(s *backend.Step) error {
	passed = uintptr(unsafe.Pointer(s))
	return nil
}

// Hide returns the Step it is given, wherever the stack grows: a pointer
// left at the Step's old place, on a stack that is freed and handed to
// another goroutine, would make a step read and write that goroutine's
// frames. It does under checkptr (-race) if Hide makes a call, which may
// grow the stack, while it holds the Step's address as a uintptr.
func TestHideKeepsTheStepAcrossStackGrowth(t *testing.T) {
	stackdepth.Sweep(t, "Hide's result", hideOnStack)
}

//go:noinline
func hideOnStack() bool {
	var s backend.Step
	return backend.Hide(&s) == &s
}

// Run passes the Stepper the caller's Step, wherever the stack grows.
func TestRunPassesTheStepAcrossStackGrowth(t *testing.T) {
	stackdepth.Sweep(t, "the Step Run passed", runOnStack)
}

//go:noinline
func runOnStack() bool {
	var s backend.Step
	if err := backend.Run(recordStepper{}, &s); err != nil {
		return false
	}
	return passed == uintptr(unsafe.Pointer(&s))
}
