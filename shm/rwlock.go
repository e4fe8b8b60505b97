package shm

// Read/write locks: the lock_* members of include/ephpm_kv.h, with the
// rules of contract/rwlock.go. Every call is one step under the lock word of the
// name's shard: the name's entry is read, contract decides on it, and the
// entry is stored or removed as the decision says with put or removeEntry,
// the same steps every write here takes, so that a process killed at any
// instruction leaves the entry as it was or as the decision made it (a
// single index store commits a put; recovery finishes whichever side of it
// the kill fell). A grant's fence is minted into the fence file under the
// same lock (fence.go), after the grant is stored: a kill between the two
// loses a fence nobody was told, never reuses one. The waiters the decision
// names are woken before the lock is released; a wake lost to a kill costs
// a waiter one pause (maxWaitSleep at most), never its turn: it looks again.
//
// Entries written here are locks: stored with flagPinned, never evicted,
// as SetNX's. A read hold that a dead process left lapses at its own
// deadline, as every hold does: the next decision on the name drops it.

import (
	"bytes"
	"sync/atomic"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// deadlineAt is when something with ttl lapses if set at t: 0 (never) for
// ttl 0.
func deadlineAt(t int64, ttl time.Duration) int64 {
	if ttl == 0 {
		return 0
	}
	return t + int64(ttl)
}

// LockAttempt is one attempt of lock_acquire: contract.DecideAcquire applied to
// key's entry in one step under its shard's lock, the grant's fence minted
// in that step (the sequence SetNXFenced mints from), then the waiters the
// decision names woken. claim is how long a refused exclusive attempt's
// claim refuses new readers (0: it leaves none). fence is 0 unless out is
// contract.Inserted.
func (s *Store) LockAttempt(key string, token []byte, mode contract.LockMode, ttl, claim time.Duration) (contract.SetNXOutcome, int64, error) {
	if err := contract.CheckLockAttempt(key, token, mode, ttl, claim); err != nil {
		return 0, 0, err
	}
	ft, err := s.fences()
	if err != nil {
		return 0, 0, err
	}
	d, fence, err := s.lockStep(key, ft, func(old []byte, live bool, t int64) (contract.LockDecision, error) {
		var claimUntil int64
		if mode == contract.LockExclusive && claim > 0 {
			claimUntil = t + int64(claim)
		}
		return contract.DecideAcquire(old, live, mode, token, deadlineAt(t, ttl), claimUntil, t)
	})
	switch {
	case err != nil:
		return 0, 0, err
	case d.Granted:
		return contract.Inserted, fence, nil
	}
	return contract.Exists, 0, nil
}

// LockRelease removes token's hold of key (contract.DecideRelease) and reports
// whether token held it. Any value set_nx may have stored is a token here.
func (s *Store) LockRelease(key string, token []byte) (bool, error) {
	if err := contract.CheckWrite(key, token, 0); err != nil {
		return false, err
	}
	d, _, err := s.lockStep(key, nil, func(old []byte, live bool, t int64) (contract.LockDecision, error) {
		return contract.DecideRelease(old, live, token, t), nil
	})
	return d.Granted, err
}

// LockRefresh makes token's hold of key lapse ttl from now (0: never)
// (contract.DecideRefresh) and reports whether token held it.
func (s *Store) LockRefresh(key string, token []byte, ttl time.Duration) (bool, error) {
	if err := contract.CheckWrite(key, token, ttl); err != nil {
		return false, err
	}
	d, _, err := s.lockStep(key, nil, func(old []byte, live bool, t int64) (contract.LockDecision, error) {
		return contract.DecideRefresh(old, live, token, deadlineAt(t, ttl), t), nil
	})
	return d.Granted, err
}

// LockInfo is contract.LockHolders of key's live entry: holders 0 when key is
// free.
func (s *Store) LockInfo(key string) (mode contract.LockMode, holders int, err error) {
	if err := contract.CheckKey(key); err != nil {
		return 0, 0, err
	}
	sh, h, tag, tk, err := s.lockKey(key)
	if err != nil {
		return 0, 0, err
	}
	defer s.unlockKeyCatching(sh, tk, &err)
	// The expiry clock, as every TTL of the segment (and memstore's lock steps).
	t := expiryNow()
	_, b := s.live(sh, h, tag, key, &t)
	if b == noBlock {
		mode, n := contract.LockHolders(nil, false, t)
		return mode, n, nil
	}
	mode, n := contract.LockHolders(sh.valueView(b), true, t)
	return mode, n, nil
}

// lockStep applies decide's decision on key's entry in one step under the
// shard's lock and returns it. ft is an attempt's (nil for the other
// steps): a grant mints its fence there, and the attempt counts in the
// stats as a set_nx win or loss, as memstore's do. A
// store that does not fit makes room with no lock held (makeRoom) and
// decides again on what the entry is then; if it cannot, the call fails
// with contract.ErrNoMemory and nothing changed.
func (s *Store) lockStep(key string, ft *fenceTable, decide func(old []byte, live bool, t int64) (contract.LockDecision, error)) (contract.LockDecision, int64, error) {
	tk, err := s.enter()
	if err != nil {
		return contract.LockDecision{}, 0, err
	}
	defer s.leave(tk)
	on, minSize := s.compression()
	sh, h, tag := s.locate(key)
	var w write
	var d contract.LockDecision
	var fence int64
	err = s.writeLoop(sh, sh, &w, func() (room, error) {
		// The expiry clock: the record's deadlines and the entry's TTL are
		// compared with every other TTL of the segment on it.
		t := expiryNow()
		room := sh.roomFor()
		pos, b, ins := sh.lookup(tag, key)
		// A lock whose holder's process is dead (a Bound grant: entry.go)
		// has lapsed as an expired one has.
		gone := b != noBlock && s.lapsed(sh, b, &t)
		var old []byte
		if b != noBlock && !gone {
			old = sh.valueView(b)
		}
		var err error
		if d, err = decide(old, b != noBlock && !gone, t); err != nil {
			return fits, err
		}
		r := fits
		switch d.Write {
		case contract.LockStore:
			stored, cflag := storedForm(d.Value, on, minSize)
			w = write{key: key, kind: s.g.kindOf(key), h: h, tag: tag, stored: stored, flags: flagPinned | cflag, expireAt: d.ExpireAt}
			if old != nil && bytes.Equal(d.Value, old) {
				// The same hold with a new deadline (a refresh): still
				// bound to its holder's process, if it was.
				w.holder = sh.entryHolder(b)
			}
			r = s.put(sh, &w, pos, b, ins, room)
		case contract.LockRemove:
			s.removeEntry(sh, pos, b, h) // wakes the oldest waiter
		}
		if r != fits {
			return r, nil
		}
		if gone && d.Write != contract.LockKeep {
			sh.count(cExpirations)
		}
		switch {
		case ft != nil && d.Granted:
			fence = ft.mint(h)
			sh.count(cSetNXWins)
		case ft != nil:
			sh.count(cSetNXLosses)
		}
		if atomic.LoadUint32(sh.u32(sWaiters)) != 0 {
			switch {
			case d.Wake == contract.WakeAll:
				s.wakeAll(sh, h, false)
			case d.Wake == contract.WakeOne && d.Write != contract.LockRemove:
				s.wakeOne(sh, h)
			}
		}
		if d.Write != contract.LockKeep {
			s.sweepSome(sh, sweepPerWrite, &t)
		}
		return fits, nil
	})
	if err != nil {
		return contract.LockDecision{}, 0, err
	}
	// d.Value may view the mapping (a decision that keeps the old record
	// returns it), valid only under the shard lock, which is gone now.
	d.Value = nil
	return d, fence, nil
}

// valueView returns the entry's logical value: the mapping itself when it
// is stored plain (valid only while the shard lock is held, and only until
// the block is freed), else a decompressed copy. A decision reads it and a
// put copies from it before the old block is freed.
func (sh *shard) valueView(b int64) []byte {
	if sh.entryMeta(b)&flagCompressed == 0 {
		return sh.entryStored(b)
	}
	v := make([]byte, sh.logicalLen(b))
	sh.readInto(b, v)
	return v
}
