package backend

import (
	"time"
	"unsafe"

	"github.com/ephpm/ephpm/contract"
)

// Step is one atomic attempt on a backend: take or check a lock, act on
// one key, release the lock (see contract.Step, which says what each part
// does). Backend.Step applies one; the functions below are the table's
// members that fuse a lock with a read or a write, each one Step, so that
// each is written once for every backend, and a new combination is a new
// Step, not a new member.
type Step = contract.Step

// The parts of a Step (contract.Guard, contract.Action).
type (
	Guard  = contract.Guard
	Action = contract.Action
)

const (
	GuardNone        = contract.GuardNone
	GuardToken       = contract.GuardToken
	GuardFence       = contract.GuardFence
	GuardFenceHolder = contract.GuardFenceHolder

	ActionNone   = contract.ActionNone
	ActionGet    = contract.ActionGet
	ActionSet    = contract.ActionSet
	ActionDel    = contract.ActionDel
	ActionExpire = contract.ActionExpire
)

// Stepper is what applies Steps: every Backend, and what a caller that
// needs nothing else of one asks for (package session's lock loop).
type Stepper interface {
	Step(s *Step) error
}

// Run is b.Step(s) for a caller that keeps s on its stack, as every
// function below does: through an interface the compiler cannot see what
// Step does with s, and would put every Step on the heap (a ~150-byte
// allocation per call of a member on the session path). Step keeps
// nothing of s past the call (Backend.Step's contract), so s is passed
// hidden from escape analysis, which is told instead that what s points
// to (keys, values, the destination) escapes, as it does through any
// interface call: a caller's buffers stay on the heap.
func Run(b Stepper, s *Step) error {
	return b.Step(Hide(s))
}

// Hide is s hidden from escape analysis as Run passes it, for a caller
// that passes a Step it keeps on its stack to another method that keeps
// nothing of it past the call (lockwait's attempt in a line).
//
// Between taking s's address as a uintptr and making it a pointer again,
// Hide makes no call: a call may grow the stack and move it, which does
// not adjust a uintptr, and the result would point into the old stack,
// freed and given to another goroutine. go:nocheckptr keeps checkptr
// (on under -race, -msan and -asan) from putting its call between the two.
//
//go:nocheckptr
func Hide(s *Step) *Step {
	if never.on {
		never.s = *s // what s points to escapes; s itself does not
	}
	p := uintptr(unsafe.Pointer(s))
	return *(**Step)(unsafe.Pointer(&p))
}

// never is where Run tells escape analysis that a Step's contents escape;
// nothing is ever stored there.
var never struct {
	on bool
	s  Step
}

// SetNXFenced is SetNX that also mints, in the same atomic step, the
// grant's fencing token: a number strictly greater than that of every
// earlier fenced grant of key, never reset by the lock's release, expiry
// or eviction, nor by Flush. fence is 0 when key was held.
func SetNXFenced(b Stepper, key string, value []byte, ttl time.Duration) (out contract.SetNXOutcome, fence int64, err error) {
	var s Step
	s.Lock, s.Token, s.LockTTL, s.Acquire, s.Fenced = key, value, ttl, true, true
	err = Run(b, &s)
	return s.Outcome, s.Fence, err
}

// SetNXGet is one attempt of set_nx_wait_get: SetNX of key, and once
// inserted, GetInto of dataKey (n, found as GetInto returns them), in one
// atomic step. Nothing is read when the lock is not inserted.
func SetNXGet(b Stepper, key string, value []byte, ttl time.Duration, dataKey string, dst []byte) (out contract.SetNXOutcome, n int, found bool, err error) {
	var s Step
	s.Lock, s.Token, s.LockTTL, s.Acquire, s.Bound = key, value, ttl, true, true
	s.Action, s.Key, s.Dst = ActionGet, dataKey, dst
	err = Run(b, &s)
	return s.Outcome, s.N, s.Found, err
}

// SetNXGetFenced is SetNXGet whose grant also mints its fence, as
// SetNXFenced does, in the same sequence (fence 0 when not inserted).
func SetNXGetFenced(b Stepper, key string, value []byte, ttl time.Duration, dataKey string, dst []byte) (out contract.SetNXOutcome, n int, found bool, fence int64, err error) {
	var s Step
	s.Lock, s.Token, s.LockTTL, s.Acquire, s.Fenced, s.Bound = key, value, ttl, true, true, true
	s.Action, s.Key, s.Dst = ActionGet, dataKey, dst
	err = Run(b, &s)
	return s.Outcome, s.N, s.Found, s.Fence, err
}

// SetGuarded stores value under key, as Set does, only while guardKey
// holds a live entry equal to guardToken, in one atomic step, and reports
// whether it did (false: nothing changed).
func SetGuarded(b Stepper, key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	var s Step
	s.Lock, s.Token, s.Guard = guardKey, guardToken, GuardToken
	s.Action, s.Key, s.Value, s.TTL = ActionSet, key, value, ttl
	err := Run(b, &s)
	return s.Held, err
}

// DelGuarded removes key only while guardKey holds guardToken, in one
// atomic step, and reports whether the guard held (key then holds no
// entry, whether or not it held one).
func DelGuarded(b Stepper, key, guardKey string, guardToken []byte) (bool, error) {
	var s Step
	s.Lock, s.Token, s.Guard = guardKey, guardToken, GuardToken
	s.Action, s.Key = ActionDel, key
	err := Run(b, &s)
	return s.Held, err
}

// SetGuardedRelease is SetGuarded of key, and if the guard held, DelIfEq
// of guardKey with guardToken, in one atomic step; it reports whether the
// guard held (false: nothing changed).
func SetGuardedRelease(b Stepper, key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	var s Step
	s.Lock, s.Token, s.Guard, s.Release = guardKey, guardToken, GuardToken, true
	s.Action, s.Key, s.Value, s.TTL = ActionSet, key, value, ttl
	err := Run(b, &s)
	return s.Held, err
}

// ExpireGuardedRelease is, while guardKey holds guardToken, Expire of
// key, and if key was live, DelIfEq of guardKey with guardToken, in one
// atomic step; it reports whether both happened (false: nothing changed).
func ExpireGuardedRelease(b Stepper, key string, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	var s Step
	s.Lock, s.Token, s.Guard, s.Release = guardKey, guardToken, GuardToken, true
	s.Action, s.Key, s.TTL = ActionExpire, key, ttl
	err := Run(b, &s)
	return s.Done, err
}

// SetFenced stores value under key only while fence is still the latest
// grant of lock, in one atomic step, and reports whether it did. Whether
// lock is still held does not matter.
func SetFenced(b Stepper, key string, value []byte, ttl time.Duration, lock string, fence int64) (bool, error) {
	var s Step
	s.Lock, s.Guard, s.Fence = lock, GuardFence, fence
	s.Action, s.Key, s.Value, s.TTL = ActionSet, key, value, ttl
	err := Run(b, &s)
	return s.Held, err
}

// DelFenced removes key only while fence is still the latest grant of
// lock, in one atomic step, and reports whether the fence held.
func DelFenced(b Stepper, key, lock string, fence int64) (bool, error) {
	var s Step
	s.Lock, s.Guard, s.Fence = lock, GuardFence, fence
	s.Action, s.Key = ActionDel, key
	err := Run(b, &s)
	return s.Held, err
}

// SetFencedRelease stores value under key only while fence is still the
// latest grant of lock and lock holds no live entry other than token, and
// then releases lock if it holds token (DelIfEq), in one atomic step; it
// reports whether it wrote (false: nothing changed).
func SetFencedRelease(b Stepper, key string, value []byte, ttl time.Duration, lock string, fence int64, token []byte) (bool, error) {
	var s Step
	s.Lock, s.Token, s.Guard, s.Fence, s.Release = lock, token, GuardFenceHolder, fence, true
	s.Action, s.Key, s.Value, s.TTL = ActionSet, key, value, ttl
	err := Run(b, &s)
	return s.Held, err
}

// DelFencedRelease is SetFencedRelease that removes key instead of
// writing it (as DelFenced removes).
func DelFencedRelease(b Stepper, key, lock string, fence int64, token []byte) (bool, error) {
	var s Step
	s.Lock, s.Token, s.Guard, s.Fence, s.Release = lock, token, GuardFenceHolder, fence, true
	s.Action, s.Key = ActionDel, key
	err := Run(b, &s)
	return s.Held, err
}
