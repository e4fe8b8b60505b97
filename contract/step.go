// Steps: one atomic attempt that takes or checks a lock, acts on one key,
// and releases the lock, whatever the combination. Every backend applies
// a Step in one step of its own (package backend: Backend.Step); the
// members that fuse a lock with a read or a write are each one Step.

package contract

import (
	"fmt"
	"time"
)

// Guard says what must hold of a Step's lock for the step to act: it is
// checked in the same atomic step as the action.
type Guard uint8

const (
	// GuardNone: nothing is checked.
	GuardNone Guard = iota
	// GuardToken: Lock holds a live entry equal to Token.
	GuardToken
	// GuardFence: Fence is still Lock's latest fenced grant (no grant of
	// Lock that mints a fence came since); whether Lock is still held
	// does not matter.
	GuardFence
	// GuardFenceHolder: GuardFence, and Lock holds no live entry other
	// than Token (a holder whose grant minted no fence).
	GuardFenceHolder
)

// Action is what a Step does to its Key once its lock is taken or its
// guard holds.
type Action uint8

const (
	// ActionNone: nothing; the step takes, checks or releases its lock.
	ActionNone Action = iota
	// ActionGet copies Key's live value into Dst if it fits, as GetInto
	// does: N its length either way (N > len(Dst): nothing copied),
	// Found whether there was one.
	ActionGet
	// ActionSet stores Value under Key with TTL (0: none), counted from
	// the step, as Set does (a write that does not fit fails the step
	// with nothing changed).
	ActionSet
	// ActionDel removes Key (whether or not it held a live entry).
	ActionDel
	// ActionExpire gives Key's live entry a TTL of TTL (0: none) from
	// the step, as Expire does.
	ActionExpire
)

// Step is one atomic attempt on a store: optionally take a lock
// (Acquire) or check one (Guard), then act on one key (Action), then
// optionally release the lock (Release), all decided and done in one
// step, so that no other call comes between them. Each part is optional,
// and every combination means the same on every backend; the ops table's
// members that fuse a lock with a read or a write (set_nx_wait_get's
// attempt, set_guarded_release, set_fenced_release, ...) are each one
// Step (package backend names them).
//
// The caller fills the inputs, keeps the Step (a store reads it during
// the call only, and keeps nothing of it), and reads the outputs after
// the call; every output is set by the call, whatever it held before. A
// Step may be reused, with its inputs changed or not.
//
// The parts, in the order the step applies them:
//
//   - Acquire: if Lock holds no live entry (an expired one counts as
//     none), Lock = Token with LockTTL (0: none), as SetNX stores a lock
//     (never evicted); Outcome Inserted, and with Fenced, Fence the
//     grant's fencing token (a number greater than that of every earlier
//     fenced grant of Lock, in the sequence SetNXFenced and LockAttempt
//     mint from). Else Outcome Exists, and nothing else happens. An
//     acquiring step checks no Guard and releases nothing.
//   - Guard (when not acquiring): if it does not hold, Held is false
//     and nothing else happens.
//   - Action, on Key: see Action. Done reports whether it was done.
//   - Release: DelIfEq of Lock with Token (waking a waiter, handing the
//     lock on, as every release does), only when the guard held and,
//     for ActionExpire, the action was done; Released reports whether
//     Lock held Token and was released.
//
// Held is false only when the acquire found Lock held or the guard did
// not hold: then nothing changed. An error wrapping ErrInvalidArgument,
// ErrNoMemory or ErrNothingDone means nothing changed; another error
// leaves the outcome unknown, as for every member.
type Step struct {
	// Lock is the key of the lock the step takes, checks or releases,
	// with Token: its holder's value.
	Lock  string
	Token []byte
	// Acquire takes Lock for Token, with LockTTL (0: no expiry).
	Acquire bool
	// Fenced: the acquire mints the grant's fence into Fence.
	Fenced bool
	// Bound: the lock lasts no longer than the process that took it,
	// where the store can tell (a session's lock granted to the session
	// handler, ephpm_kv_lock(bound: true)): a shared-memory segment
	// records the process, Redis gives the lock a lease the process
	// renews; elsewhere it has no effect.
	Bound   bool
	LockTTL time.Duration
	// Guard is the condition on Lock when not acquiring.
	Guard Guard
	// Fence is, for GuardFence and GuardFenceHolder, the fence that must
	// still be Lock's latest grant; after a Fenced acquire, the fence it
	// minted (0 if it took nothing).
	Fence int64

	// Action is what is done to Key: with Value and TTL (ActionSet, TTL
	// also for ActionExpire), or into Dst (ActionGet).
	Action Action
	Key    string
	Value  []byte
	TTL    time.Duration
	Dst    []byte

	// Release releases Lock with Token after the action.
	Release bool

	// Outcome is the acquire's: Inserted or Exists (0 without Acquire).
	Outcome SetNXOutcome
	// Held: the acquire took Lock, or the guard held (always, for
	// GuardNone). False: nothing changed.
	Held bool
	// Done: the action was done (ActionSet: Key written; ActionDel: a
	// live entry removed; ActionExpire: Key was live and got its TTL;
	// ActionGet: Key read, N and Found as ActionGet says).
	Done  bool
	N     int
	Found bool
	// Released: Lock held Token and was released.
	Released bool
}

// Reset sets a Step's outputs to what a step that did nothing reports:
// every backend's Step method calls it first.
func (st *Step) Reset() {
	st.Outcome, st.Held, st.Done, st.N, st.Found, st.Released = 0, false, false, 0, false, false
	if st.Acquire {
		st.Fence = 0
	}
}

// UsesLock reports whether st takes, checks or releases its lock.
func (st *Step) UsesLock() bool { return st.Acquire || st.Guard != GuardNone || st.Release }

// CheckStep is the limits on a Step's inputs, for every backend: those of
// each part it has (a key, a value, a TTL, a positive fence for a fence
// guard), checked in the order the members that are Steps check theirs,
// and the combinations that mean something: an acquire checks no guard,
// releases nothing and acts on another key than its lock; Fenced and
// Bound belong to an acquire. It returns an error wrapping
// ErrInvalidArgument, or nil.
func CheckStep(st *Step) error {
	switch st.Action {
	case ActionNone:
	case ActionGet, ActionDel:
		if err := CheckKey(st.Key); err != nil {
			return err
		}
	case ActionSet:
		if err := CheckWrite(st.Key, st.Value, st.TTL); err != nil {
			return err
		}
	case ActionExpire:
		if err := CheckKey(st.Key); err != nil {
			return err
		}
		if err := CheckTTL(st.TTL); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: step action %d is unknown", ErrInvalidArgument, st.Action)
	}
	if !st.UsesLock() {
		if st.Fenced || st.Bound {
			return errStepAcquireOnly
		}
		return nil
	}
	if err := CheckKey(st.Lock); err != nil {
		return err
	}
	if st.Acquire {
		if err := CheckValue(st.Token); err != nil {
			return err
		}
		if err := CheckTTL(st.LockTTL); err != nil {
			return err
		}
		switch {
		case st.Guard != GuardNone || st.Release:
			return fmt.Errorf("%w: a step that acquires its lock checks no guard and releases nothing", ErrInvalidArgument)
		case st.Action != ActionNone && st.Key == st.Lock:
			return fmt.Errorf("%w: a step that acquires its lock acts on another key", ErrInvalidArgument)
		}
		return nil
	}
	if st.Fenced || st.Bound {
		return errStepAcquireOnly
	}
	switch st.Guard {
	case GuardNone, GuardToken:
	case GuardFence, GuardFenceHolder:
		if st.Fence <= 0 {
			return badFence(st.Fence)
		}
	default:
		return fmt.Errorf("%w: step guard %d is unknown", ErrInvalidArgument, st.Guard)
	}
	return nil
}

var errStepAcquireOnly = fmt.Errorf("%w: Fenced and Bound belong to a step that acquires its lock", ErrInvalidArgument)

// badFence is the error of a fence a fenced grant cannot have returned.
func badFence(fence int64) error {
	return fmt.Errorf("%w: fence %d is not positive (a fenced grant returns a positive number)", ErrInvalidArgument, fence)
}
