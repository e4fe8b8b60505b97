package shm

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/ephpm/ephpm/kv"
)

// Eviction. A write that does not fit makes room with no lock held, then
// tries again (install, IncrBy). Expired entries go first (a sampled one is
// reclaimed rather than compared; a full sweep runs when only they can
// make room); then, as the policy allows, the least recently used of a sample of eligible entries:
// never a pinned one (a lock, a pinned prefix) nor the key being written,
// whose old value must survive a write that fails. Before evicting anything
// makeRoom checks, from the shards' counts of evictable bytes, that
// eviction can make the write fit; if it cannot, the write fails at once
// and nothing is evicted.
const (
	evictSpan    = 64 // slots looked at per sample, at least
	evictSamples = 8  // eligible entries compared per sample
)

// makeRoom tries to make w, which put refused with r in sh, fit, holding
// one shard lock at a time, and reports whether it may fit now.
func (s *Store) makeRoom(sh *shard, r room, w *write) bool {
	size := entrySize(len(w.key), len(w.stored))
	policy := s.MemoryConfig().Policy
	if r == overLimit {
		deficit := func() int64 { return s.reserved() + w.delta - s.g.limit }
		if s.returnCredit() && deficit() <= 0 {
			return true
		}
		if policy == kv.NoEviction || s.evictableTotal(policy)-s.protected(sh, w, policy) < deficit() {
			// Only expired entries can go: reclaim them all.
			if !s.sweepAll() {
				return false
			}
			if deficit() <= 0 {
				return true
			}
			if policy == kv.NoEviction || s.evictableTotal(policy)-s.protected(sh, w, policy) < deficit() {
				return false
			}
		}
		for misses := 0; deficit() > 0; {
			v := s.mostEvictable(policy)
			if v == nil || s.lock(v) != nil {
				return false
			}
			ok := s.evictOne(v, policy, w.key)
			storeRelI64(v.credit(), 0) // what it freed goes to the pool, not to v
			s.unlock(v)
			if !ok {
				if misses++; misses > len(s.shards) {
					return false
				}
			}
		}
		return true
	}
	if s.lock(sh) != nil {
		return false
	}
	defer s.unlock(sh)
	if s.shardHasRoom(sh, r, size) {
		return true
	}
	// Free bytes enough but in pieces: gather them before evicting anything.
	if r == heapFull && s.defragment(sh, size) {
		return true
	}
	fitsIfEvicted := func() bool {
		evictable := atomic.LoadInt64(sh.i64(evictField(policy))) - s.protected(nil, w, policy)
		if r == indexFull {
			return evictable > 0
		}
		return evictable+(s.g.heapSize-atomic.LoadInt64(sh.i64(sHeapUsed))) >= size
	}
	if policy == kv.NoEviction || !fitsIfEvicted() {
		s.sweepShard(sh)
		if s.shardHasRoom(sh, r, size) {
			return true
		}
		if policy == kv.NoEviction || !fitsIfEvicted() {
			return false
		}
	}
	for !s.shardHasRoom(sh, r, size) {
		if !s.evictOne(sh, policy, w.key) {
			return false
		}
	}
	return true
}

// sweepAll reclaims every expired entry, one shard lock at a time.
func (s *Store) sweepAll() bool {
	for i := range s.shards {
		if s.lock(&s.shards[i]) != nil {
			return false
		}
		s.sweepShard(&s.shards[i])
		s.unlock(&s.shards[i])
	}
	return true
}

func evictField(policy kv.Policy) int64 {
	if policy == kv.VolatileLRU {
		return sEvictTTL
	}
	return sEvictAll
}

// protected is the charge of w's key's own entry if the policy could evict
// it: it is never evicted to make room for its own new value. lock is the
// shard to lock for the look-up, nil if the caller holds it.
func (s *Store) protected(lock *shard, w *write, policy kv.Policy) int64 {
	sh, _, tag := s.locate(w.key)
	if lock != nil {
		if s.lock(lock) != nil {
			return 0
		}
		defer s.unlock(lock)
	}
	pos, b, _ := sh.lookup(tag, w.key)
	if pos < 0 || !eligible(sh, b, policy, "") {
		return 0
	}
	return chargeOf(sh.blockSize(b))
}

func (s *Store) evictableTotal(policy kv.Policy) int64 {
	var n int64
	for i := range s.shards {
		n += atomic.LoadInt64(s.shards[i].i64(evictField(policy)))
	}
	return n
}

// mostEvictable is the shard with the most evictable bytes, or nil.
func (s *Store) mostEvictable(policy kv.Policy) *shard {
	var best *shard
	var most int64
	for i := range s.shards {
		if n := atomic.LoadInt64(s.shards[i].i64(evictField(policy))); n > most {
			best, most = &s.shards[i], n
		}
	}
	return best
}

// shardHasRoom reports whether sh has what a write refused with r needs.
// Caller holds the lock.
func (s *Store) shardHasRoom(sh *shard, r room, size int64) bool {
	if r == indexFull {
		return int(atomic.LoadUint32(sh.u32(sEntries)))+1 <= s.g.indexSlots*3/4
	}
	for c := sizeClass(size); c < nClasses; c++ {
		for b := unlink(atomic.LoadUint32(sh.listHead(c))); b != noBlock; b = unlink(atomic.LoadUint32(sh.nextFree(b))) {
			if sh.blockSize(b) >= size {
				return true
			}
		}
	}
	return false
}

func eligible(sh *shard, b int64, policy kv.Policy, protect string) bool {
	return !sh.entryPinned(b) && (policy != kv.VolatileLRU || sh.entryExpireAt(b) != 0) &&
		(protect == "" || sh.entryKey(b) != protect)
}

// evictOne evicts the least recently used of a sample of sh's eligible
// entries (of all of them if the sample finds none) and reports whether
// there was one. Caller holds the lock.
func (s *Store) evictOne(sh *shard, policy kv.Policy, protect string) bool {
	n := s.g.indexSlots
	t := expiryNow()
	clock := s.lruClock(t)
	victim, pos, oldest := int64(noBlock), -1, uint32(0)
	reclaimed := false
	consider := func(i int) bool {
		v := atomic.LoadUint64(sh.slot(i))
		if v == slotEmpty || v == slotTomb {
			return false
		}
		b := slotBlock(v)
		if expired(sh.entryExpireAt(b), &t) {
			// Expired: gone already, whatever the policy; reclaim it first.
			s.removeEntry(sh, i, b, hashKey(sh.entryKey(b)))
			sh.count(cExpirations)
			reclaimed = true
			return true
		}
		if !eligible(sh, b, policy, protect) {
			return false
		}
		if age := clock - atomic.LoadUint32(sh.entryAccess(b)); victim == noBlock || age > oldest {
			victim, pos, oldest = b, i, age
		}
		return true
	}
	// Look far enough to meet about evictSamples entries in a sparse index.
	span := evictSpan
	if e := int(atomic.LoadUint32(sh.u32(sEntries))); e > 0 {
		span = min(max(span, evictSamples*n/e), n)
	}
	first, found := rand.IntN(n), 0
	for j := 0; j < span && found < evictSamples && !reclaimed; j++ {
		if consider((first + j) & (n - 1)) {
			found++
		}
	}
	if victim == noBlock && !reclaimed {
		for i := 0; i < n && !reclaimed; i++ {
			consider(i)
		}
	}
	if reclaimed {
		return true
	}
	if victim == noBlock {
		return false
	}
	s.removeEntry(sh, pos, victim, hashKey(sh.entryKey(victim)))
	sh.count(cEvictions)
	return true
}
