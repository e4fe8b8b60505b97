// Package lockwait is the wait for a lock, behind every lock the store
// grants (session locks, ephpm_kv_lock(), read/write locks, the fenced
// ones): attempt, and on contention wait before the next attempt (the
// store's Wait where it has one, a backoff of 10 ms doubling to a 100 ms
// cap where it has not, or a turn in the key's line where waiters line up
// across processes), until a wait budget, counted in wall-clock time,
// runs out.
//
// The ops table's waiting members (set_nx_wait and its kin, lock_acquire)
// reach it through the bridge; Go programs call Locker's methods directly.
// The session protocol's key names and tokens are package sessionkeys';
// this package takes a waiter's id in line from sessionkeys.NewToken.
package lockwait

import (
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/sessionkeys"
)

// Backoff is the retry schedule: the first wait is Initial, each next one
// doubles, capped at Max.
type Backoff struct{ Initial, Max time.Duration }

// DefaultBackoff is the schedule of the session handler: 10 ms doubling to
// a 100 ms cap.
var DefaultBackoff = Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}

// Next returns the step after step.
func (b Backoff) Next(step time.Duration) time.Duration {
	if step >= b.Max/2 {
		return b.Max
	}
	return 2 * step
}

// Store is what Acquire needs of a key-value store.
type Store interface {
	SetNX(key string, value []byte, ttl time.Duration) (contract.SetNXOutcome, error)
}

// Waiter is what a store offers if it can wait for a key to become free.
// Wait blocks for at most timeout and returns early (true) once key holds
// no live entry. Acquire uses it instead of sleeping, so that a released
// lock passes to a waiter within microseconds rather than a backoff step.
type Waiter interface {
	Wait(key string, timeout time.Duration) (bool, error)
}

// Clock is the time source of Acquire; tests substitute a fake one.
type Clock interface {
	Now() time.Time
	Sleep(time.Duration)
}

type systemClock struct{}

func (systemClock) Now() time.Time        { return time.Now() }
func (systemClock) Sleep(d time.Duration) { time.Sleep(d) }

// SystemClock is the real clock.
var SystemClock Clock = systemClock{}

// Locker acquires locks in a Store. The zero Backoff and a nil Clock mean
// DefaultBackoff and SystemClock. Lease is how long a waiter's place in a
// Line lasts past its last attempt; 0 means LineStep + LeaseMargin, which
// is what every caller but a test that must not depend on the host's
// scheduler wants.
type Locker struct {
	Store   Store
	Clock   Clock
	Backoff Backoff
	Lease   time.Duration
}

// Result says how an acquisition went. How long it took is the caller's
// to time (the PHP handler times the whole call, crossing included, for
// its warning): Acquire reads the clock only to keep to the budget.
type Result struct {
	Acquired bool // the lock is ours
	Attempts int  // SetNX calls made
}

// Acquire takes the lock key with token and ttl: SetNX, and on contention
// a wait of the current backoff step (Waiter.Wait if the store has it, else
// a sleep) before the next attempt, until budget has passed on the wall
// clock. It makes at least one attempt, and never waits past the budget.
// Where the store has a Line for key, each attempt is made in that line
// (AcquireStep).
//
// A store error ends the acquisition at once and is returned: an unknown
// outcome or a full store is never mistaken for contention. Note that after
// an error from SetNX the lock may have been granted anyway; the caller
// should still release it with its token.
func (l *Locker) Acquire(key string, token []byte, ttl, budget time.Duration) (Result, error) {
	var s backend.Step
	s.Lock, s.Token, s.LockTTL, s.Acquire = key, token, ttl, true
	return l.acquireStep(nil, &s, budget)
}

// AcquireFenced is Acquire through fs's fenced SetNX (backend.SetNXFenced,
// one Step): a lock acquired comes with the fence its grant minted.
func (l *Locker) AcquireFenced(fs backend.Stepper, key string, token []byte, ttl, budget time.Duration) (res Result, fence int64, err error) {
	var s backend.Step
	s.Lock, s.Token, s.LockTTL, s.Acquire, s.Fenced = key, token, ttl, true, true
	res, err = l.AcquireStep(fs, &s, budget)
	return res, s.Fence, err
}

// AcquireGetFenced is AcquireGet through fr's fenced SetNXGet
// (backend.SetNXGetFenced, one Step): the attempt that takes the lock also
// mints its fence and reads dataKey into dst.
func (l *Locker) AcquireGetFenced(fr backend.Stepper, key string, token []byte, ttl, budget time.Duration, dataKey string, dst []byte) (Result, Read, int64, error) {
	s := getStep(key, token, ttl, dataKey, dst)
	s.Fenced = true
	res, err := l.AcquireStep(fr, &s, budget)
	return res, Read{N: s.N, Found: s.Found}, s.Fence, err
}

// LockStore is what AcquireLock needs: one attempt of a read/write lock
// (backend.Backend.LockAttempt).
type LockStore interface {
	LockAttempt(key string, token []byte, mode contract.LockMode, ttl, claim time.Duration) (contract.SetNXOutcome, int64, error)
}

// LockLine is what a store with a Line offers if read/write lock attempts
// can wait in it: LockAttempt for waiter id, granted only in its turn
// (first in line, or nobody in line) and otherwise putting or keeping it
// in line with a lease of lease (0: refused without a place in line; an
// exclusive attempt claims the name only in its turn), and WaitTurn for a
// waiter in mode, whose turn depends on what holds the name (a reader's
// comes beside other readers).
type LockLine interface {
	LockAttemptInLine(key string, token []byte, mode contract.LockMode, ttl, claim time.Duration, id string, lease time.Duration) (contract.SetNXOutcome, int64, error)
	WaitLockTurn(key, id string, mode contract.LockMode, timeout time.Duration) (bool, error)
}

// AcquireLock is Acquire for a read/write lock: each attempt is
// ls.LockAttempt of key in mode, and a grant comes with the fence it
// minted. An exclusive attempt asks for a claim of contract.WriterClaim, cut to
// what is left of the budget, read from the clock before each attempt (so
// a claim outlives the call by no more than the moment between that read
// and the store's step): while the
// caller waits, its claim refuses new readers and the readers inside
// leave. The pause between attempts is Waiter.Wait, which a release that
// frees key (or leaves it to a waiting writer) cuts short. Where ls is a
// LockLine and l.Store has a Line for key, the attempts wait in that line
// instead, as Acquire's do: readers and writers in one line, in the order
// they came.
func (l *Locker) AcquireLock(ls LockStore, key string, token []byte, mode contract.LockMode, ttl, budget time.Duration) (res Result, fence int64, err error) {
	clock := l.clock()
	deadline := clock.Now().Add(budget) // no later than acquire's own
	ll, lined := ls.(LockLine)
	turn := func(_ Line, id string, timeout time.Duration) (bool, error) {
		_, err := ll.WaitLockTurn(key, id, mode, timeout)
		return false, err
	}
	res, err = l.acquire(key, budget, lined, turn, func(line *Line, id string, lease time.Duration) (contract.SetNXOutcome, error) {
		var claim time.Duration
		if mode == contract.LockExclusive {
			claim = max(0, min(contract.WriterClaim, deadline.Sub(clock.Now())))
		}
		var out contract.SetNXOutcome
		var f int64
		var err error
		if line != nil {
			out, f, err = ll.LockAttemptInLine(key, token, mode, ttl, claim, id, lease)
		} else {
			out, f, err = ls.LockAttempt(key, token, mode, ttl, claim)
		}
		fence = f
		return out, err
	})
	return res, fence, err
}

// Line is what a store offers if waiters for a key can line up across
// every process that shares it, so that a release hands the key to the
// one that came first (redisstore: a sorted set beside the key). A waiter
// has an id of its own and a lease its every attempt renews; a waiter
// that stops attempting (its process died) loses its place when the lease
// lapses.
type Line interface {
	// InLine reports whether key's waiters can line up.
	InLine(key string) bool
	// StepInLine is one attempt of a Step that acquires its lock (every
	// fence and action), for waiter id in the line of st.Lock: granted,
	// and the whole step done, only in its turn (first in line, or nobody
	// in line), with st's outputs those of the store's Step; otherwise
	// answering as Step does when the lock is held, and putting or keeping
	// id in line with a lease of lease (0: refused without a place in
	// line).
	StepInLine(st *contract.Step, id string, lease time.Duration) error
	// WaitTurn blocks for at most timeout until a release hands key to
	// waiter id (or it is free and id is first in line) and reports
	// whether it is id's turn.
	WaitTurn(key, id string, timeout time.Duration) (bool, error)
	// LeaveLine takes waiter id out of key's line.
	LeaveLine(key, id string) error
}

// StepLine is a Line whose release can make the head's step for it: the
// lock handed over with the step's outputs in the message that wakes the
// head, so that the head makes no call of its own once woken
// (redisstore: handover.go). AcquireStep waits with WaitStep where the
// Line is one.
type StepLine interface {
	Line
	// WaitStep is WaitTurn for waiter id of st.Lock's line, whose
	// attempts are st: done true when the release that handed the lock
	// to id made st for it, st then holding the outputs StepInLine's
	// grant would have; done false when id is to attempt again.
	WaitStep(st *contract.Step, id string, timeout time.Duration) (done bool, err error)
}

// LineStep is the longest a waiter in line waits between attempts, and
// LeaseMargin how much longer its lease lasts: a waiter whose process died
// holds up the line for its lease (both) and the next waiter's wait until
// its next attempt (LineStep) at most.
const (
	LineStep    = time.Second
	LeaseMargin = 500 * time.Millisecond
)

// Read is what AcquireGet read once the lock was granted.
type Read struct {
	N     int  // the value's length (N > len(dst): nothing copied)
	Found bool // dataKey held a live entry
}

// AcquireGet is Acquire with a store that applies Steps (a
// backend.Stepper): the attempt that takes the lock also reads dataKey
// into dst, in one step (backend.SetNXGet: n is the value's length, n >
// len(dst): nothing copied; found false if dataKey holds no live entry).
func (l *Locker) AcquireGet(key string, token []byte, ttl, budget time.Duration, dataKey string, dst []byte) (Result, Read, error) {
	s := getStep(key, token, ttl, dataKey, dst)
	res, err := l.AcquireStep(l.Store.(backend.Stepper), &s, budget)
	return res, Read{N: s.N, Found: s.Found}, err
}

// getStep is the Step of backend.SetNXGet.
func getStep(key string, token []byte, ttl time.Duration, dataKey string, dst []byte) backend.Step {
	var s backend.Step
	s.Lock, s.Token, s.LockTTL, s.Acquire, s.Bound = key, token, ttl, true, true
	s.Action, s.Key, s.Dst = backend.ActionGet, dataKey, dst
	return s
}

// clock is l.Clock, or SystemClock if it is nil.
func (l *Locker) clock() Clock {
	if l.Clock == nil {
		return SystemClock
	}
	return l.Clock
}

// acquire runs Acquire's loop with attempt as each SetNX: in line as id
// with a lease, when line is not nil (only if lined, and the store has a
// Line for key), waiting for its turn with turn, which answers granted
// true when the release that woke it made the attempt for it, and granted
// it (StepLine).
func (l *Locker) acquire(key string, budget time.Duration, lined bool, turn func(ln Line, id string, timeout time.Duration) (granted bool, err error),
	attempt func(line *Line, id string, lease time.Duration) (contract.SetNXOutcome, error)) (Result, error) {
	clock, backoff := l.clock(), l.Backoff
	if backoff == (Backoff{}) {
		backoff = DefaultBackoff
	}
	waiter, canWait := l.Store.(Waiter)
	var line *Line
	var id string
	if ln, ok := l.Store.(Line); lined && ok && ln.InLine(key) {
		tok, err := sessionkeys.NewToken()
		if err != nil {
			return Result{}, err
		}
		line, id = &ln, tok
	}

	deadline := clock.Now().Add(budget)
	step := backoff.Initial
	// A call that will not wait attempts in line with no lease: refused,
	// it takes no place there, and has none to leave.
	lease := LineStep + LeaseMargin
	if l.Lease > 0 {
		lease = l.Lease
	}
	if budget <= 0 {
		lease = 0
	}
	var res Result
	for {
		res.Attempts++
		out, err := attempt(line, id, lease)
		if err != nil {
			if line != nil && lease > 0 {
				// The place is given up too (a full server that refused
				// the step's write in its turn would otherwise hold up
				// the line until the lease lapses). A lock the attempt
				// may have taken is not the line's to hand on: it holds
				// no lease any more. Best effort, as below.
				(*line).LeaveLine(key, id)
			}
			return res, err
		}
		now := clock.Now()
		if out == contract.Inserted {
			res.Acquired = true
			return res, nil
		}
		remaining := deadline.Sub(now)
		if remaining <= 0 {
			if line != nil && lease > 0 {
				// Out of time: give the place up at once rather than
				// hold up the line until the lease lapses. A failure
				// here changes nothing this call reports: the lease
				// still lapses.
				(*line).LeaveLine(key, id)
			}
			return res, nil
		}
		pause := min(step, remaining)
		if line != nil {
			// In line, the release that hands the key over wakes this
			// waiter, and WaitTurn wakes when the key expires: the wait
			// before the next attempt (which renews the lease) can be
			// long.
			granted, err := turn(*line, id, min(LineStep, remaining))
			if err != nil {
				return res, err
			}
			if granted {
				res.Acquired = true
				return res, nil
			}
		} else if canWait {
			if _, err := waiter.Wait(key, pause); err != nil {
				return res, err
			}
		} else {
			clock.Sleep(pause)
		}
		step = backoff.Next(step)
	}
}
