// Expiry: whether an entry is live (lapsed, live), the sweep that removes
// expired entries a few slots at a time, and the calls that read or change
// a TTL (Expire, ExpireIfEq, PTTL).

package shm

import (
	"sync/atomic"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// live returns key's slot and block if it holds an entry that has not
// expired at t (an expired one is removed). Caller holds the lock.
func (s *Store) live(sh *shard, h uint64, tag uint32, key string, t *int64) (int, int64) {
	pos, b, _ := sh.lookup(tag, key)
	if pos < 0 {
		return -1, noBlock
	}
	if s.lapsed(sh, b, t) {
		s.removeEntry(sh, pos, b, h)
		sh.count(cExpirations)
		return -1, noBlock
	}
	return pos, b
}

// lapsed reports whether the entry b has expired at *t (read into *t if
// needed) or is a session's lock whose holder's process is dead (see
// entry.go). Caller holds the lock.
func (s *Store) lapsed(sh *shard, b int64, t *int64) bool {
	if expired(sh.entryExpireAt(b), t) {
		return true
	}
	o := sh.entryHolder(b)
	return o != 0 && o != s.tag && !s.g.tagAlive(o)
}

// sweepSome looks at a few index slots from the shard's sweep cursor and
// removes the expired entries there. Caller holds the lock.
func (s *Store) sweepSome(sh *shard, n int, t *int64) {
	mask := s.g.indexSlots - 1
	cur := int(atomic.LoadUint32(sh.u32(sSweep)))
	for k := 0; k < n; k++ {
		i := (cur + k) & mask
		v := atomic.LoadUint64(sh.slot(i))
		if v == slotEmpty || v == slotTomb {
			continue
		}
		b := sh.blockOf(v)
		if at := sh.entryExpireAt(b); expired(at, t) {
			s.removeEntry(sh, i, b, sh.g.hashOf(sh.entryKey(b)))
			sh.count(cExpirations)
		}
	}
	storeDerived32(sh.u32(sSweep), uint32((cur+n)&mask))
}

// sweepShard removes every expired entry of the shard. Caller holds the
// lock.
func (s *Store) sweepShard(sh *shard) {
	storeDerived32(sh.u32(sSweep), 0)
	var t int64
	s.sweepSome(sh, s.g.indexSlots, &t)
}

const sweepPerWrite = 4

// Expire gives a live entry a new TTL counted from now (0: none).
func (s *Store) Expire(key string, ttl time.Duration) (bool, error) {
	return s.expireIf(key, nil, ttl)
}

// ExpireIfEq is Expire only while key holds a live entry equal to token.
func (s *Store) ExpireIfEq(key string, token []byte, ttl time.Duration) (bool, error) {
	if token == nil {
		token = []byte{}
	}
	return s.expireIf(key, token, ttl)
}

func (s *Store) expireIf(key string, token []byte, ttl time.Duration) (set bool, err error) {
	if err := contract.CheckKey(key); err != nil {
		return false, err
	}
	if err := contract.CheckTTL(ttl); err != nil {
		return false, err
	}
	sh, h, tag, tk, err := s.lockKey(key)
	if err != nil {
		return false, err
	}
	defer s.unlockKeyCatching(sh, tk, &err)
	var t int64
	_, b := s.live(sh, h, tag, key, &t)
	if b == noBlock || token != nil && !sh.valueEquals(b, token) {
		return false, nil
	}
	s.retime(sh, b, key, ttl, &t)
	return true, nil
}

// retime gives key's live entry b a TTL of ttl from *t (0: none), moving
// its charge out of its eviction class and back. Caller holds sh's lock.
func (s *Store) retime(sh *shard, b int64, key string, ttl time.Duration, t *int64) {
	at := int64(0)
	if ttl != 0 {
		at = clockAt(t) + int64(ttl)
	}
	kind := s.g.kindOf(key)
	sh.account(b, kind, -1)
	sh.setEntryExpireAt(b, at)
	sh.account(b, kind, 1)
}

// PTTL returns a live entry's remaining TTL, -1 if it has none.
func (s *Store) PTTL(key string) (ttl time.Duration, found bool, err error) {
	sh, h, tag, tk, err := s.lockKey(key)
	if err != nil {
		return 0, false, err
	}
	defer s.unlockKeyCatching(sh, tk, &err)
	var t int64
	_, b := s.live(sh, h, tag, key, &t)
	if b == noBlock {
		return 0, false, nil
	}
	at := sh.entryExpireAt(b)
	if at == 0 {
		return -1, true, nil
	}
	return time.Duration(at - t), true, nil
}
