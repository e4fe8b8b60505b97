// A release that does its head's whole step: a session read, or a bound
// lock's grant, handed over with its value and fence in the message that
// wakes the head.

package redisstore

import (
	"time"

	"github.com/ephpm/ephpm/contract"
)

// A waiter in line learns that a release handed it the lock from the
// release's message, and then makes one more call, its claim: the step it
// was waiting to make (the read of a session's data, the fence's mint).
// That call is a round trip while the lock is idle, between two holders,
// on every hand-off (docs/measurements.md, "Sessions on Redis: where a
// hand-off's time goes"). A waiter whose step a release can make for it
// says so in its lease (lease_parts, queue.go), and the release does it
// (hand_on): it sets the lock to the waiter's token for the step's PX,
// mints the fence, reads the value, takes the waiter out of line and
// publishes the step's answer on the waiter's head channel. The woken
// waiter has its lock, fence and value with no call of its own
// (WaitStep).
//
// Not on a Cluster, where the keys the release reads and writes for the
// head are not among its script's (a slot moving between masters would
// refuse them half-way), and not with wait_replicas: the release's WAIT
// is the releaser's, and the waiter's grant must wait for its own. Only
// for a step that acquires a Bound lock under a lease (so that the lock a
// release sets holds for no more than a lease if the waiter died, as the
// lock a plain hand-over sets does), guards nothing, and reads at most
// its key: a session's read, or a lock's grant. The head is woken on its
// subscriber connection (a standalone server: turnwait.go) or through its
// process's hub (Sentinel: wait.go), the answer in the message either
// way. A waiter that misses the message (its wait ended just before)
// finds at its next look that the lock holds its token, and claims it as
// it claims a lock handed over the plain way: its lease stays until it
// lapses, for that look to see; the claim mints a second fence, larger,
// and the first is never seen.

// handsOverStep reports whether a release may do st for its waiter in
// line (see above).
func (s *Store) handsOverStep(st *contract.Step) bool {
	return s.mode != Cluster && s.waitReplicas == 0 && s.lease > 0 && st.Acquire && st.Bound &&
		st.Guard == contract.GuardNone && !st.Release &&
		(st.Action == contract.ActionNone || st.Action == contract.ActionGet)
}

// WaitStep is WaitTurn for waiter id in the line of st.Lock, whose
// attempts are st (StepInLine): it returns done true when the release that
// handed the lock to id did st for it, st then holding the outputs
// StepInLine's grant would have (the lock renewed under its lease as
// that grant's is), and done false when id is to attempt again (its turn
// came, or timeout passed: as WaitTurn).
func (s *Store) WaitStep(st *contract.Step, id string, timeout time.Duration) (done bool, err error) {
	if !s.handsOverStep(st) {
		_, err := s.WaitTurn(st.Lock, id, timeout)
		return false, err
	}
	rk := s.redisKey(st.Lock)
	// A lock the release sets was set after this waiter subscribed:
	// its lease and TTL are counted from before that.
	from := monoNow()
	_, answer, err := s.waitLine(st.Lock, rk, id, timeout, s.lineLook(rk, id, turnScript))
	if err != nil || answer == "" {
		return false, err
	}
	defer s.near.forget(st.Lock)
	st.Reset()
	if err := s.stepReply(st, reply{kind: '$', b: []byte(answer)}, nil); err != nil {
		return false, err
	}
	if !st.Held {
		return false, errProtocol
	}
	if _, renewed := s.boundTTL(st.LockTTL); renewed {
		s.renew.hold(rk, st.Token, from, st.LockTTL)
	}
	return true, nil
}
