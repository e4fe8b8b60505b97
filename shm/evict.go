package shm

import (
	"errors"
	"math/rand/v2"
	"sync/atomic"

	"github.com/ephpm/ephpm/contract"
)

// Eviction. A write that does not fit makes room with no lock held, then
// tries again (install, IncrBy). Expired entries go first (a sampled one is
// reclaimed rather than compared; a full sweep runs when only they can
// make room); then, as the policy allows, the least recently used of a sample of eligible entries:
// never a pinned one (a lock, a pinned prefix), nor held session data, nor
// the key being written, whose old value must survive a write that fails;
// session data only for session data (session.go). Before evicting anything
// makeRoom checks, from the shards' counts of evictable bytes, that
// eviction can make the write fit; if it cannot, the write fails at once
// and nothing is evicted.
const (
	evictSpan    = 64 // slots looked at per sample, at least
	evictSamples = 8  // eligible entries compared per sample
)

// makeRoom tries to make w, which put refused with r in sh, fit, holding
// one shard lock at a time, and reports whether it may fit now. A write
// evicts only the classes contract.EvictOrder gives its kind, in that order: other
// writes never make session data go. Another shard found corrupt (or
// broken) is left out; sh found corrupt (or broken) is the error, as is
// any lock refused for another cause (the segment's file found removed):
// nothing more is tried then.
//
// Every part that holds a lock runs in inShard, so that a corruption found
// there marks its shard broken before its lock is released: no process
// takes a half-changed shard as serving.
func (s *Store) makeRoom(sh *shard, r room, w *write) (bool, error) {
	size := entrySize(len(w.key), len(w.stored))
	policy := s.memoryConfig().Policy
	order := contract.EvictOrder(w.kind)
	switch r {
	case overBudget:
		// Only session data makes room for session data.
		return s.evictUntil(policy, w, contract.BudgetEvictOrder(),
			func() int64 { return s.sessionBytes() + w.delta - s.sessionLimit() })
	case overShare:
		return s.makeShareRoom(sh, w, size, policy)
	case overLimit:
		deficit := func() int64 { return s.reserved() + w.delta - s.g.limit }
		returned, err := s.returnCredit()
		if err != nil {
			return false, err
		}
		if returned && deficit() <= 0 {
			return true, nil
		}
		return s.evictUntil(policy, w, order, deficit)
	}
	var fit bool
	err := s.inShard(sh, func() { fit = s.makeShardRoom(sh, r, w, size, policy, order) })
	return fit, err
}

// makeShardRoom is makeRoom for a write refused for room in sh itself
// (heapFull, indexFull): it defragments, then sweeps and evicts in sh
// only. Caller holds sh's lock, in inShard.
func (s *Store) makeShardRoom(sh *shard, r room, w *write, size int64, policy contract.Policy, order []contract.EvictClass) bool {
	if s.shardHasRoom(sh, r, size) {
		return true
	}
	// Free bytes enough but in pieces: gather them before evicting anything.
	if r == heapFull && s.defragment(sh, size) {
		return true
	}
	fitsIfEvicted := func() bool {
		var evictable int64
		for _, c := range order {
			evictable += atomic.LoadInt64(sh.i64(classField(c, policy == contract.VolatileLRU)))
		}
		own, _ := s.protected(w, policy, order)
		evictable -= own
		if r == indexFull {
			return evictable > 0
		}
		return evictable+(s.g.heapSize-atomic.LoadInt64(sh.i64(sHeapUsed))) >= size
	}
	if policy == contract.NoEviction || !fitsIfEvicted() {
		s.sweepShard(sh)
		if s.shardHasRoom(sh, r, size) {
			return true
		}
		if policy == contract.NoEviction || !fitsIfEvicted() {
			return false
		}
	}
	for _, c := range order {
		for atomic.LoadInt64(sh.i64(classField(c, policy == contract.VolatileLRU))) > 0 && !s.shardHasRoom(sh, r, size) {
			if !s.evictOne(sh, policy, c, w.key) {
				break
			}
		}
	}
	return s.shardHasRoom(sh, r, size)
}

// makeShareRoom makes room for the session write w that its shard's
// share of the session budget refused (sessionShare): only session data
// of sh makes room for it, never-read before returning, as for the budget.
// A write larger than the share alone, or one that all of sh's evictable
// session data would not make fit, evicts nothing (expired entries go).
// sh found broken or corrupt is the error, marked broken (inShard) before
// its lock is released; so is a lock refused for another cause.
func (s *Store) makeShareRoom(sh *shard, w *write, size int64, policy contract.Policy) (bool, error) {
	share := s.sessionShare(s.sessionLimit())
	var fit bool
	err := s.inShard(sh, func() {
		if chargeOf(size) > share {
			return
		}
		deficit := func() int64 { return atomic.LoadInt64(sh.sessUsed()) + w.delta - share }
		order := contract.BudgetEvictOrder()
		fitsIfEvicted := func() bool {
			var evictable int64
			for _, c := range order {
				evictable += atomic.LoadInt64(sh.i64(classField(c, policy == contract.VolatileLRU)))
			}
			own, _ := s.protected(w, policy, order)
			return evictable-own >= deficit()
		}
		if policy == contract.NoEviction || !fitsIfEvicted() {
			s.sweepShard(sh)
			if fit = deficit() <= 0; fit || policy == contract.NoEviction || !fitsIfEvicted() {
				return
			}
		}
		for _, c := range order {
			for deficit() > 0 && atomic.LoadInt64(sh.i64(classField(c, policy == contract.VolatileLRU))) > 0 {
				if !s.evictOne(sh, policy, c, w.key) {
					break
				}
			}
		}
		fit = deficit() <= 0
	})
	return fit, err
}

// evictUntil evicts entries of the classes in order (the next only once
// the one before has none left to take) across the shards until deficit
// is no longer positive, and reports whether it is not or it evicted
// something: concurrent writers may take what it frees and evict the
// entries the counts promised (it gives up on a class after a few misses),
// and the write that asked tries again, under its lock, up to
// writeAttempts times. Failing there refused writes that fitted (a flood
// of session writes beside held sessions: docs/measurements.md). Before evicting it
// checks, from the shards' evictable counts, that eviction can get there;
// if not, it reclaims expired entries only, and fails if that is not
// enough: a write that eviction cannot make fit evicts nothing. Another
// shard found broken is left out; w's own shard found broken, or a lock
// refused for another cause (leftOut: the segment's file found removed),
// ends it with that error, evicting no more.
func (s *Store) evictUntil(policy contract.Policy, w *write, order []contract.EvictClass, deficit func() int64) (bool, error) {
	if deficit() <= 0 {
		return true, nil
	}
	// w's own entry is never evicted for it: left out of what may go. Its
	// shard found broken is w's error, as any other refusal of its lock.
	ownShard := &s.shards[w.h&uint64(len(s.shards)-1)]
	own, ownClass := int64(0), contract.EvictKept
	if err := s.inShard(ownShard, func() { own, ownClass = s.protected(w, policy, order) }); err != nil {
		return false, err
	}
	avail := func(c contract.EvictClass) int64 {
		n := s.evictableTotal(policy, c)
		if c == ownClass {
			n -= own
		}
		return n
	}
	evictable := func() int64 {
		var n int64
		for _, c := range order {
			n += avail(c)
		}
		return n
	}
	if policy == contract.NoEviction || evictable() < deficit() {
		// Only expired entries can go: reclaim them all.
		if err := s.sweepAll(); err != nil {
			return false, err
		}
		if deficit() <= 0 {
			return true, nil
		}
		if policy == contract.NoEviction || evictable() < deficit() {
			return false, nil
		}
	}
	evicted := false
	for _, c := range order {
		for misses := 0; deficit() > 0 && avail(c) > 0; {
			var skip int64
			if c == ownClass {
				skip = own
			}
			v := s.mostEvictable(policy, c, ownShard, skip)
			if v == nil {
				break
			}
			var ok bool
			if err := s.inShard(v, func() {
				ok = s.evictOne(v, policy, c, w.key)
				storeDerivedI64(v.credit(), 0) // what it freed goes to the pool, not to v
			}); err != nil {
				if leftOut(err) {
					continue // broken: mostEvictable leaves it out from now on
				}
				return false, err
			}
			evicted = evicted || ok
			if !ok {
				// The counts said there was one (they change as others
				// write): look again, a few times.
				if misses++; misses > 2 {
					break
				}
			}
		}
	}
	return deficit() <= 0 || evicted, nil
}

// leftOut reports whether err, a call's on one shard, is that shard's
// own: it is marked broken (corruptError), and the calls that go over
// every shard pass it by, as mostEvictable and the store-wide sums leave
// it out from then on. Any other error (the segment's file found
// removed) is every shard's: such a call ends with it, rather than try
// the next shard, or the same one again.
func leftOut(err error) bool { return errors.Is(err, ErrCorrupt) }

// sweepAll reclaims every expired entry, one shard lock at a time, of
// every shard not broken. It stops at a lock refused for another cause
// (leftOut) and returns that error.
func (s *Store) sweepAll() error {
	for i := range s.shards {
		sh := &s.shards[i]
		if err := s.inShard(sh, func() { s.sweepShard(sh) }); err != nil && !leftOut(err) {
			return err
		}
	}
	return nil
}

// protected is the charge of w's key's own entry, and its class, if the
// policy could evict it as one of the classes in order (else 0 and
// contract.EvictKept): it is never evicted to make room for its own new value.
// Caller holds the lock of w's key's shard, in inShard.
func (s *Store) protected(w *write, policy contract.Policy, order []contract.EvictClass) (int64, contract.EvictClass) {
	sh, _, tag := s.locate(w.key)
	pos, b, _ := sh.lookup(tag, w.key)
	if pos < 0 {
		return 0, contract.EvictKept
	}
	for _, c := range order {
		if eligible(sh, b, policy, c, "") {
			return chargeOf(sh.blockSize(b)), c
		}
	}
	return 0, contract.EvictKept
}

// evictableTotal sums the evictable bytes of class c of every shard not
// broken: a broken shard's are never evicted (mostEvictable leaves it out),
// and its counts may be the damage that broke it.
func (s *Store) evictableTotal(policy contract.Policy, c contract.EvictClass) int64 {
	var n int64
	for i := range s.shards {
		if s.shards[i].isBroken() {
			continue
		}
		n += atomic.LoadInt64(s.shards[i].i64(classField(c, policy == contract.VolatileLRU)))
	}
	return n
}

// mostEvictable is the shard not broken with the most evictable bytes of
// class c, counting skip bytes fewer in shard own, or nil.
func (s *Store) mostEvictable(policy contract.Policy, c contract.EvictClass, own *shard, skip int64) *shard {
	var best *shard
	var most int64
	for i := range s.shards {
		if s.shards[i].isBroken() {
			continue
		}
		n := atomic.LoadInt64(s.shards[i].i64(classField(c, policy == contract.VolatileLRU)))
		if &s.shards[i] == own {
			n -= skip
		}
		if n > most {
			best, most = &s.shards[i], n
		}
	}
	return best
}

// shardHasRoom reports whether sh has what a write refused with r needs,
// having freed the spare first when r asks for heap.
// Caller holds the lock.
func (s *Store) shardHasRoom(sh *shard, r room, size int64) bool {
	if r == indexFull {
		return int(atomic.LoadUint32(sh.u32(sEntries)))+1 <= s.g.indexSlots*3/4
	}
	sh.dropSpare() // its bytes, merged, may make the block
	for c := sizeClass(size); c < nClasses; c++ {
		for b, n := sh.linked(atomic.LoadUint32(sh.listHead(c))), 1; b != noBlock; b, n = sh.nextListed(b), n+1 {
			if sh.listed(b, n) >= size {
				return true
			}
		}
	}
	return false
}

// eligible reports whether policy may evict the live entry b as one of
// class c, b not being protect's. Caller holds the lock.
func eligible(sh *shard, b int64, policy contract.Policy, c contract.EvictClass, protect string) bool {
	if cl, _ := sh.classOf(b); cl != c {
		return false
	}
	return policy.Evicts(sh.entryExpireAt(b) != 0) && (protect == "" || sh.entryKey(b) != protect)
}

// evictOne evicts the least recently used of a sample of sh's entries that
// policy may evict as class c (of all of them if the sample finds none)
// and reports whether there was one; an expired entry met is reclaimed
// instead. Caller holds the lock.
func (s *Store) evictOne(sh *shard, policy contract.Policy, c contract.EvictClass, protect string) bool {
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
		b := sh.blockOf(v)
		if expired(sh.entryExpireAt(b), &t) {
			// Expired: gone already, whatever the policy; reclaim it first.
			s.removeEntry(sh, i, b, sh.g.hashOf(sh.entryKey(b)))
			sh.count(cExpirations)
			reclaimed = true
			return true
		}
		if !eligible(sh, b, policy, c, protect) {
			return false
		}
		if age := clock - atomic.LoadUint32(sh.entryAccess(b)); victim == noBlock || age > oldest {
			victim, pos, oldest = b, i, age
		}
		return true
	}
	// Look far enough to meet about evictSamples entries of class c in a
	// sparse index: its share of the shard's entries is taken to be its
	// share of the bytes.
	span := evictSpan
	if e := int(atomic.LoadUint32(sh.u32(sEntries))); e > 0 {
		span = max(span, evictSamples*n/e)
		if used, of := atomic.LoadInt64(sh.used()), atomic.LoadInt64(sh.i64(classField(c, false))); of > 0 && of < used {
			span = int(min(int64(span)*(used/of+1), int64(n)))
		}
		span = min(span, n)
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
	s.removeEntry(sh, pos, victim, sh.g.hashOf(sh.entryKey(victim)))
	sh.count(cEvictions)
	return true
}
