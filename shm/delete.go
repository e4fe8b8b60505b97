// Removing entries: Del, DelIfEq and Flush, and removeEntry and unindex,
// which every removal (a delete, an expiry, an eviction) goes through.

package shm

import (
	"sync/atomic"

	"github.com/ephpm/ephpm/backend"
)

// removeEntry removes the entry b in slot pos, whose key hashes to h, and
// wakes the oldest process waiting for that key. A SIGKILL between any two
// steps leaves either the entry (still referenced: recovery makes it live
// again) or its absence (a tombstone: recovery frees the block). Caller
// holds the lock.
func (s *Store) removeEntry(sh *shard, pos int, b int64, h uint64) {
	sh.unindex(pos, b)
	sh.release(b)
	if atomic.LoadUint32(sh.u32(sWaiters)) != 0 {
		s.wakeOne(sh, h)
	}
}

// unindex takes the live entry b out of slot pos, leaving b in flight for
// the caller to free: first b, then the tombstone (the commit), then the
// figures, the data of a session whose lock it was going back to its
// class. Caller holds the lock.
func (sh *shard) unindex(pos int, b int64) {
	sh.setState(b, stateInFlight)
	sh.removeAt(pos)
	key := sh.entryKey(b)
	kind := sh.g.kindOf(key)
	sh.account(b, kind, -1)
	sh.holdData(kind, key, 1)
}

// Del removes key and reports whether a live entry was removed.
func (s *Store) Del(key string) (removed bool, err error) {
	sh, h, tag, tk, err := s.lockKey(key)
	if err != nil {
		return false, err
	}
	defer s.unlockKeyCatching(sh, tk, &err)
	pos, b, _ := sh.lookup(tag, key)
	if pos < 0 {
		return false, nil
	}
	var t int64
	gone := expired(sh.entryExpireAt(b), &t)
	if gone {
		sh.count(cExpirations)
	}
	s.removeEntry(sh, pos, b, h)
	return !gone, nil
}

// DelIfEq removes key only if it holds a live entry whose (decompressed)
// value equals token, in one step; an expired entry never matches.
func (s *Store) DelIfEq(key string, token []byte) (removed bool, err error) {
	sh, h, tag, tk, err := s.lockKey(key)
	if err != nil {
		return false, err
	}
	defer s.unlockKeyCatching(sh, tk, &err)
	var t int64
	pos, b := s.live(sh, h, tag, key, &t)
	if b != noBlock && sh.valueEquals(b, token) {
		s.removeEntry(sh, pos, b, h)
		sh.count(cDelIfEqMatches)
		return true, nil
	}
	sh.count(cDelIfEqMismatches)
	return false, nil
}

// Flush removes every entry, one shard at a time, and wakes every waiter.
// Refused at a shard after the first, it has emptied those before: its
// error is then no contract.ErrNothingDone (backend.AfterDone).
func (s *Store) Flush() error {
	tk, err := s.enter()
	if err != nil {
		return err
	}
	defer s.leave(tk)
	for i := range s.shards {
		sh := &s.shards[i]
		if err := s.inShard(sh, func() {
			for j := 0; j < s.g.indexSlots; j++ {
				if v := atomic.LoadUint64(sh.slot(j)); v != slotEmpty && v != slotTomb {
					b := sh.blockOf(v)
					sh.unindex(j, b)
					sh.release(b)
				}
			}
			sh.compact()
			s.wakeAll(sh, 0, true)
		}); err != nil {
			if i > 0 {
				return backend.AfterDone(err)
			}
			return err
		}
	}
	return nil
}
