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
// Line for s.Lock and the step only takes the lock or reads (ActionNone,
// ActionGet), the attempts wait in that line as Acquire's do, through the
// line's own attempt (FencedLine's for a fenced grant); a step that
// writes, removes or expires a key attempts outside any line, woken as
// Acquire's are where l.Store is a Waiter.
func (l *Locker) AcquireStep(b backend.Stepper, s *backend.Step, budget time.Duration) (Result, error) {
	fl, fenced := l.Store.(FencedLine)
	lined := s.Action == backend.ActionNone || s.Action == backend.ActionGet
	if s.Fenced {
		lined = lined && fenced
	}
	return l.acquire(s.Lock, budget, lined, nil, func(line *Line, id string, lease time.Duration) (contract.SetNXOutcome, error) {
		if line == nil {
			err := backend.Run(b, s)
			return s.Outcome, err
		}
		s.Reset()
		var out contract.SetNXOutcome
		var err error
		dataKey := "" // a step that only takes the lock reads nothing, whatever Key holds
		if s.Action == backend.ActionGet {
			dataKey = s.Key
		}
		switch {
		case s.Fenced:
			out, s.N, s.Found, s.Fence, err = fl.SetNXGetFencedInLine(s.Lock, s.Token, s.LockTTL, id, lease, dataKey, s.Dst)
		case s.Action == backend.ActionNone:
			out, err = (*line).SetNXInLine(s.Lock, s.Token, s.LockTTL, id, lease)
		default:
			out, s.N, s.Found, err = (*line).SetNXGetInLine(s.Lock, s.Token, s.LockTTL, id, lease, dataKey, s.Dst)
		}
		s.Outcome = out
		s.Held = err == nil && out == contract.Inserted
		s.Done = s.Held && s.Action == backend.ActionGet
		return out, err
	})
}
