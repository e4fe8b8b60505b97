package memstore

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/ephpm/ephpm/contract"
)

const (
	evictShards   = 8  // shards sampled per eviction
	evictSamples  = 5  // candidates taken from each sampled shard
	evictScanSpan = 32 // slots scanned per sampled shard
	evictMisses   = 16 // samplings in a row that found no candidate before a full scan
)

// makeRoom is the slow path of a write of kind, under kp[0] and guarded by
// kp[1] (or ""), that needs need more bytes and that short refused for the
// attempt-th time. It returns the room it made as a grant for the write's
// next attempt, or the error the write fails with (and then holds no
// grant).
//
// It first returns every shard's credit and removes every expired entry.
// Then it decides, from the evictable totals of the shards, whether
// eviction could make the write fit, and if it could not, fails at once
// and evicts nothing. Else it evicts, least recently used first within
// each class, by the policy: for session data over its budget, sessions
// not read since written before sessions read back; then for room in the
// store, other entries, and for session data only after those, sessions
// in the same order. So only session data makes session data go. It
// never evicts the entries of kp (see keep), and holds one shard lock at a
// time; the caller holds none.
func (s *Store) makeRoom(need int64, kp keep, kind contract.KeyKind, short shortfall, attempt int) (grant, error) {
	if attempt == 3 {
		return grant{}, s.noRoom(short)
	}
	var g grant
	sessionsTaken := func() bool {
		if kind == contract.KindSession && g.sessions == 0 {
			if !s.mem.takeSession(need) {
				return false
			}
			g.sessions = need
		}
		return true
	}
	storeTaken := func() bool {
		if g.store == 0 {
			if !s.mem.take(need) {
				return false
			}
			g.store = need
		}
		return true
	}
	fail := func(err error) (grant, error) {
		s.giveBack(&g)
		return grant{}, err
	}
	s.reclaimCredit()
	if sessionsTaken() && storeTaken() {
		return g, nil
	}
	s.Sweep()
	ev := s.survey(kp)
	if sessionsTaken() && storeTaken() {
		return g, nil
	}
	var sessionsShort, storeShort int64
	if limit := s.mem.sessionLimit.Load(); kind == contract.KindSession && g.sessions == 0 && limit > 0 {
		sessionsShort = s.mem.sessions.Load() + need - limit
	}
	if limit := s.mem.limit.Load(); g.store == 0 && limit > 0 {
		storeShort = s.mem.reserved.Load() + need - limit
	}
	policy := contract.Policy(s.mem.policy.Load())
	if policy == contract.NoEviction {
		if kind == contract.KindSession && g.sessions == 0 {
			return fail(s.noRoom(sessionsFull))
		}
		return fail(contract.ErrNoMemory)
	}
	plain := ev.total(contract.EvictPlain, policy)
	sessions := ev.total(contract.EvictNew, policy) + ev.total(contract.EvictReturned, policy)
	if sessionsShort > sessions {
		return fail(s.noRoom(sessionsFull))
	}
	order := contract.EvictOrder(kind)
	if kind != contract.KindSession {
		sessions = 0
	}
	if storeShort > plain+sessions {
		return fail(contract.ErrNoMemory)
	}
	if !s.evictUntil(sessionsTaken, policy, kp, contract.BudgetEvictOrder()...) {
		return fail(s.noRoom(sessionsFull))
	}
	if !s.evictUntil(storeTaken, policy, kp, order...) {
		return fail(contract.ErrNoMemory)
	}
	return g, nil
}

// keep names the entries a write's eviction leaves alone: the key written,
// whose old value must survive a write that fails, and the guard of a
// guarded write ("" if none), whose eviction would refuse the write it made
// room for.
type keep [2]string

func (kp *keep) has(key string) bool { return key == kp[0] || key == kp[1] }

// noRoom is the error of a write that short refused.
func (s *Store) noRoom(short shortfall) error {
	if short == sessionsFull {
		return s.sess.OverBudget(s.mem.sessionLimit.Load())
	}
	return contract.ErrNoMemory
}

// evictable holds the evictable totals of every slot (see slotOf).
type evictable [numSlots]int64

// total is what policy may evict of class c.
func (ev *evictable) total(c contract.EvictClass, policy contract.Policy) int64 {
	lo, hi := slots(c, policy)
	var n int64
	for _, v := range ev[lo : hi+1] {
		n += v
	}
	return n
}

// survey returns every shard's unused credit to the store and adds up the
// shards' evictable totals, leaving out the entries of kp. It holds one
// shard lock at a time; the caller holds none.
func (s *Store) survey(kp keep) evictable {
	var ev evictable
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		s.returnCredit(sh)
		for j, n := range sh.evictable {
			ev[j] += n
		}
		sh.mu.Unlock()
	}
	for i, key := range kp {
		if key == "" || (i == 1 && key == kp[0]) {
			continue
		}
		sh, h, kind := s.locate(key)
		sh.mu.Lock()
		if b := sh.t.get(h, key); b != nil {
			if slot := s.slotOf(sh, b, kind, h); slot != slotKept {
				ev[slot] -= blockCost(b)
			}
		}
		sh.mu.Unlock()
	}
	return ev
}

// evictUntil evicts entries that policy allows, of the classes in order
// (the next only once the one before has none left), until taken reports
// that the room needed is there and taken, and reports whether it was.
// It never evicts the entries of kp.
func (s *Store) evictUntil(taken func() bool, policy contract.Policy, kp keep, order ...contract.EvictClass) bool {
	for _, c := range order {
		for misses := 0; ; {
			if taken() {
				return true
			}
			if misses < evictMisses {
				if s.evictOne(policy, c, &kp, evictShards, evictScanSpan) {
					misses = 0
				} else {
					misses++
				}
				continue
			}
			// Candidates are rare: look at every slot of every shard
			// that has any.
			if !s.evictOne(policy, c, &kp, numShards, 0) {
				break
			}
		}
	}
	return taken()
}

// evictOne looks at shards shards (numShards: all of them, in order; fewer:
// at random), takes up to evictSamples entries of class c that policy may
// evict from each within span slots (0: the whole table), and evicts the
// least recently used of them. It reports whether it found a candidate.
func (s *Store) evictOne(policy contract.Policy, c contract.EvictClass, kp *keep, shards, span int) bool {
	lo, hi := slots(c, policy)
	var victim block
	var victimShard *shard
	var oldest, victimAccess uint32
	clock := s.lru.Load()
	for k := 0; k < shards; k++ {
		sh := &s.shards[k]
		if shards < numShards {
			sh = &s.shards[rand.IntN(numShards)]
		}
		sh.mu.Lock()
		if size := len(sh.t.hashes); sh.t.n > 0 && sh.has(lo, hi) {
			first, found, limit := rand.IntN(size), 0, size
			if span > 0 {
				limit = min(size, span)
			}
			for j := 0; j < limit && found < evictSamples; j++ {
				i := (first + j) % size
				b := sh.t.blocks[i]
				if b == nil || !s.mayEvict(sh, b, sh.t.hashes[i], lo, hi, kp) {
					continue
				}
				found++
				access := atomic.LoadUint32(blockAccess(b))
				if age := clock - access; victim == nil || age > oldest {
					victim, victimShard, oldest, victimAccess = b, sh, age, access
				}
			}
		}
		sh.mu.Unlock()
	}
	if victim == nil {
		return false
	}
	sh := victimShard
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// Evict it only if it is still the same entry, untouched since it was
	// sampled, and still eligible: it may have been replaced, removed or
	// read since, its session's lock taken, and a recycled block may now
	// hold a new entry, of its key or another (a lock, even); every write
	// or read stamps the access field, so an unchanged stamp means the
	// same, still cold, entry.
	key := blockKey(victim)
	_, h, _ := s.locate(key)
	if i := sh.t.find(h, key); i >= 0 && sh.t.blocks[i] == victim &&
		atomic.LoadUint32(blockAccess(victim)) == victimAccess && s.mayEvict(sh, victim, h, lo, hi, kp) {
		s.removeAt(sh, i, false)
		sh.c.evictions++
		s.returnCredit(sh) // the room made must be visible to the writer
	}
	return true
}

// has reports whether sh has evictable entries in slots lo..hi. Caller
// holds sh.mu.
func (sh *shard) has(lo, hi int) bool {
	for _, n := range sh.evictable[lo : hi+1] {
		if n > 0 {
			return true
		}
	}
	return false
}

// mayEvict reports whether b, whose key hashes to h, is in one of the
// slots lo..hi (see slotOf) and is not one of kp. Caller holds sh.mu.
func (s *Store) mayEvict(sh *shard, b block, h uint32, lo, hi int, kp *keep) bool {
	key := blockKey(b)
	slot := s.slotOf(sh, b, s.sess.Kind(key), h)
	return slot >= lo && slot <= hi && !kp.has(key)
}
