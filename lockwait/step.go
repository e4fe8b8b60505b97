package lockwait

import (
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
)

// AcquireStep is Acquire for a step that takes its lock (s.Acquire): each
// attempt is the whole step, its action too, applied by b, and when the
// lock is granted s holds that attempt's outputs; when it is not, s holds
// the last attempt's (Held false: nothing changed). Where l.Store has a
// Line for s.Lock, every attempt is made in that line (Line.StepInLine),
// whatever the step's action and fence, so that waiters are served in the
// order they came, and where it is a StepLine the release that hands the
// lock over may make the step for its head (s then holds that step's
// outputs); elsewhere the attempts are b's, woken as Acquire's are
// where l.Store is a Waiter. Acquire, AcquireGet, AcquireFenced and
// AcquireGetFenced are each this with a Step of their own.
func (l *Locker) AcquireStep(b backend.Stepper, s *backend.Step, budget time.Duration) (Result, error) {
	return l.acquireStep(b, s, budget)
}

// acquireStep is AcquireStep, with b nil for Acquire's bare acquire out of
// line: the store's own SetNX (on Redis a native SET NX, not a script), all
// a Store has.
func (l *Locker) acquireStep(b backend.Stepper, s *backend.Step, budget time.Duration) (Result, error) {
	// A release may make the head's whole step for it (StepLine).
	turn := func(ln Line, id string, timeout time.Duration) (bool, error) {
		if sl, ok := ln.(StepLine); ok {
			return sl.WaitStep(backend.Hide(s), id, timeout)
		}
		_, err := ln.WaitTurn(s.Lock, id, timeout)
		return false, err
	}
	return l.acquire(s.Lock, budget, true, turn, func(line *Line, id string, lease time.Duration) (contract.SetNXOutcome, error) {
		var err error
		switch {
		case line != nil:
			// s is the caller's, kept on its stack: StepInLine keeps
			// nothing of it, as Step does (backend.Hide).
			err = (*line).StepInLine(backend.Hide(s), id, lease)
		case b != nil:
			err = backend.Run(b, s)
		default:
			s.Reset()
			s.Outcome, err = l.Store.SetNX(s.Lock, s.Token, s.LockTTL)
			s.Held = err == nil && s.Outcome == contract.Inserted
		}
		return s.Outcome, err
	})
}
