package memstore

import (
	"time"

	"github.com/ephpm/ephpm/contract"
)

// Read/write locks in the in-process store: each method applies one of
// contract/rwlock.go's decisions to the name's entry under the shard's
// mutex, in one step with the change it asks for (install, modeLock), the
// fence a grant mints, and the wake-ups.

// lockOp is which decision a modeLock write applies.
type lockOp uint8

const (
	lockAcquire lockOp = iota
	lockRelease
	lockRefresh
)

// decideLock decides r's lock step on key's entry old (in slot i, expired
// or not) and applies what needs no room: a removal (which wakes the
// oldest waiter, as every removal does) happens here. It reports whether
// the decision stores r.value, expiring at r.at, which install then
// charges and puts as every write. Caller holds sh.mu, and releases it
// explicitly (see logicalValueHeld).
func (s *Store) decideLock(sh *shard, i int, r *writeReq, old block, oldExpired bool, c *clock) (bool, error) {
	live := old != nil && !oldExpired
	var v []byte
	if live {
		v = logicalValueHeld(old, &sh.mu, nil)
	}
	now := c.now()
	var d contract.LockDecision
	switch r.lockOp {
	case lockAcquire:
		var err error
		d, err = contract.DecideAcquire(v, live, contract.LockMode(r.lockMode), r.token, expiryAt(now, r.ttl), expiryAt(now, r.claim), now)
		if err != nil {
			return false, err
		}
		r.mintFence = d.Granted
	case lockRelease:
		d = contract.DecideRelease(v, live, r.token, now)
	case lockRefresh:
		d = contract.DecideRefresh(v, live, r.token, expiryAt(now, r.ttl), now)
	}
	r.granted, r.lockWake = d.Granted, uint8(d.Wake)
	switch d.Write {
	case contract.LockStore:
		r.value, r.at = d.Value, d.ExpireAt
		return true, nil
	case contract.LockRemove:
		s.removeAt(sh, i, false)
	}
	return false, nil
}

// countLock counts a lock_acquire attempt as set_nx's are counted (a
// grant wins, a refusal loses) once its step is final (not retried for
// room). Caller holds sh.mu.
func (sh *shard) countLock(r *writeReq, final bool) {
	switch {
	case !final || r.lockOp != lockAcquire:
	case r.granted:
		sh.c.setNXWins++
	default:
		sh.c.setNXLosses++
	}
}

// lockStep runs one lock step on key through install and reports whether
// its decision granted (acquire) or found token holding key (release,
// refresh), with an acquisition's fence. The entry a step stores is a lock
// (flagPinned: never evicted). Its value is decided under the lock, so no
// block is built before it.
func (s *Store) lockStep(key string, op lockOp, mode contract.LockMode, token []byte, ttl, claim time.Duration) (granted bool, fence int64, err error) {
	var r writeReq
	r.key, r.flags, r.mode, r.ttl = key, flagPinned, modeLock, ttl
	r.lockOp, r.lockMode, r.token, r.claim = op, uint8(mode), token, claim
	if _, err := s.install(&r); err != nil {
		return false, 0, err
	}
	return r.granted, r.fence, nil
}

// LockAttempt is one attempt of lock_acquire (include/ephpm_kv.h): the
// name's entry decided by DecideAcquire for token in mode, with the hold
// lapsing ttl from now (0: never) and, for an exclusive attempt refused by
// readers, a claim lapsing claim from now (0: none), all in one step under
// the shard's mutex; a grant mints its fence in that step (the sequence
// SetNXFenced mints from). fence is 0 unless out is Inserted. On an error
// nothing changed.
func (s *Store) LockAttempt(key string, token []byte, mode contract.LockMode, ttl, claim time.Duration) (contract.SetNXOutcome, int64, error) {
	if err := contract.CheckLockAttempt(key, token, mode, ttl, claim); err != nil {
		return 0, 0, err
	}
	granted, fence, err := s.lockStep(key, lockAcquire, mode, token, ttl, claim)
	if err != nil {
		return 0, 0, err
	}
	if !granted {
		return contract.Exists, 0, nil
	}
	return contract.Inserted, fence, nil
}

// LockRelease removes token's hold of key (DecideRelease) and reports
// whether token held it. A release that frees key, or leaves only a
// waiting writer's claim, wakes waiters.
func (s *Store) LockRelease(key string, token []byte) (bool, error) {
	if err := contract.CheckWrite(key, token, 0); err != nil {
		return false, err
	}
	held, _, err := s.lockStep(key, lockRelease, 0, token, 0, 0)
	return held, err
}

// LockRefresh makes token's hold of key lapse ttl from now (0: never)
// (DecideRefresh) and reports whether token held key.
func (s *Store) LockRefresh(key string, token []byte, ttl time.Duration) (bool, error) {
	if err := contract.CheckWrite(key, token, ttl); err != nil {
		return false, err
	}
	held, _, err := s.lockStep(key, lockRefresh, 0, token, ttl, 0)
	return held, err
}

// LockInfo says who holds key (LockHolders of its live entry; holders 0:
// free).
func (s *Store) LockInfo(key string) (mode contract.LockMode, holders int, err error) {
	if err := contract.CheckKey(key); err != nil {
		return contract.LockExclusive, 0, err
	}
	sh, h, _ := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	c := clock{s: s}
	b, _ := s.live(sh, h, key, &c)
	var v []byte
	if b != nil {
		v = logicalValue(b)
	}
	mode, holders = contract.LockHolders(v, b != nil, c.now())
	return mode, holders, nil
}
