package shm

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/ephpm/ephpm/contract"
)

// Session data in the segment, by the session rule (contract.SessionRule,
// "Session data in the in-process store" in docs/design.md):
//
//   - The rule (the data and lock prefixes) is the segment's, written in
//     its header when it is made: where a key hashes depends on it, so
//     every process must apply the same one.
//   - A session's data and lock hash by the sid (hashOf), so they share a
//     shard: whether data is held (its lock entry is in the index) is one
//     lookup under the lock the caller holds, and the lock's arrival and
//     departure move the data's charge in the same step.
//   - Session data is charged to the store's limit and to the session
//     budget: the per-shard tallies sSessUsed, summed, within hSessLimit,
//     and each within its shard's share of it (sessionShare), so that
//     sessions whose ids land in one shard leave its locks room.
//     A write that grows them takes the budget's lock word (hBudgetLock)
//     from the sum to its own tally's update, under its shard lock, so
//     that concurrent session writes in different shards never pass the
//     budget together; a removal only lowers a tally and takes no lock.
//   - Each shard counts the bytes eviction may take by class (plain, new:
//     session data not read since written, returned: read since) and by
//     TTL (classField), leaving out what is never evicted: pinned entries
//     and held session data. Session data goes only to make room for other
//     session data (the budget, or the store's limit for a session write),
//     new before returned.
//   - A get hit on session data sets flagRead (markRead): the user came
//     back. A rewrite of the same live session keeps it.
//
// Every tally is derived: recovery recomputes it from the heap walk and
// the index (derive), and Check verifies it. The budget's lock word guards
// no data of its own, so a waiter that takes it over from a dead owner has
// nothing to recover.

// classField is the shard header field counting the evictable bytes of
// class c (with a TTL, if ttl).
func classField(c contract.EvictClass, ttl bool) int64 {
	f := [contract.NumEvictClasses][2]int64{{sEvictAll, sEvictTTL}, {sEvictNew, sEvictNewTTL}, {sEvictRet, sEvictRetTTL}}[c]
	if ttl {
		return f[1]
	}
	return f[0]
}

// sessionSalts mark the kind of a session key in the high half of its
// hash (the index tag): the data and the lock of one sid share the low
// half (shard, fence bucket) and differ in the tag, so each key still has a
// hash of its own for waiting and fencing.
var sessionSalts = [...]uint64{contract.KindPlain: 0, contract.KindSession: 0x9e3779b9 << 32, contract.KindSessionLock: 0x7f4a7c15 << 32}

// hashOf is key's hash by the segment's session rule: a session key's is
// its sid's, salted by its kind; any other key's is its own.
// Most keys are told apart by one load, inline.
func (g *segment) hashOf(key string) uint64 {
	if len(key) == 0 || !g.sess.MayBeSession(key[0]) {
		return g.seed.hash(key)
	}
	return g.sessionHash(key)
}

// kindOf is key's kind by the segment's session rule, told by one load
// for most keys.
func (g *segment) kindOf(key string) contract.KeyKind {
	if len(key) == 0 || !g.sess.MayBeSession(key[0]) {
		return contract.KindPlain
	}
	return g.sess.Kind(key)
}

func (g *segment) sessionHash(key string) uint64 {
	kind, sid := g.sess.Split(key)
	return g.seed.hash(sid) ^ sessionSalts[kind]
}

// writeSessionRule records the session prefixes in a header being made.
func (g *segment) writeSessionRule(data, lock string) {
	*g.u32(hSessDataLen) = uint32(len(data))
	*g.u32(hSessLockLen) = uint32(len(lock))
	copy(unsafe.Slice((*byte)(g.ptr(hSessData)), maxSessPrefix), data)
	copy(unsafe.Slice((*byte)(g.ptr(hSessLock)), maxSessPrefix), lock)
}

// readSessionRule makes g's rule from its header; the prefixes asked for
// ("": whatever the segment has) must be the segment's.
func (g *segment) readSessionRule(data, lock, limitName string) error {
	// validate checked these lengths; read again here, they are bounded
	// again (another process may have written them since).
	d := string(unsafe.Slice((*byte)(g.ptr(hSessData)), min(*g.u32(hSessDataLen), maxSessPrefix)))
	l := string(unsafe.Slice((*byte)(g.ptr(hSessLock)), min(*g.u32(hSessLockLen), maxSessPrefix)))
	if (data != "" || lock != "") && (data != d || lock != l) {
		return fmt.Errorf("%w: segment %s was made with session prefixes %q and %q, not %q and %q: keys hash by them "+
			"(stop the processes using it and remove the file to change them)", contract.ErrInvalidArgument, g.path, d, l, data, lock)
	}
	g.sess = contract.NewSessionRule(d, l, limitName)
	return nil
}

func checkSessionPrefixes(data, lock string) error {
	if len(data) > maxSessPrefix || len(lock) > maxSessPrefix {
		return fmt.Errorf("%w: a session prefix is longer than %d bytes", contract.ErrInvalidArgument, maxSessPrefix)
	}
	return nil
}

func (sh *shard) sessUsed() *int64 { return sh.i64(sSessUsed) }

// pairBlock returns the block of the other key of the session of key, of
// kind, in sh (noBlock if there is none). Caller holds the lock.
func (sh *shard) pairBlock(kind contract.KeyKind, key string) int64 {
	var buf [128]byte // most keys fit: no allocation
	k := sh.g.sess.Pair(buf[:0], kind, key)
	if k == nil {
		return noBlock
	}
	other := unsafe.String(unsafe.SliceData(k), len(k))
	_, b, _ := sh.lookup(tagOfHash(sh.g.hashOf(other)), other)
	return b
}

// classOf returns the class of the live entry b, and whether it is session
// data. Caller holds the lock.
func (sh *shard) classOf(b int64) (contract.EvictClass, bool) {
	return sh.classOfKind(b, sh.g.kindOf(sh.entryKey(b)))
}

// classOfKind is classOf for an entry whose key's kind the caller has
// already told: a write or a removal tells it once, not once per figure.
func (sh *shard) classOfKind(b int64, kind contract.KeyKind) (contract.EvictClass, bool) {
	meta := sh.entryMeta(b)
	held := func() bool { return sh.pairBlock(contract.KindSession, sh.entryKey(b)) != noBlock }
	return contract.ClassOf(kind, meta&flagPinned != 0, meta&flagRead != 0, held), kind == contract.KindSession
}

// tallyClass adds c bytes of the entry b to the evictable count of class
// cl. Caller holds the lock.
func (sh *shard) tallyClass(b int64, cl contract.EvictClass, c int64) {
	if cl == contract.EvictKept {
		return
	}
	sh.addI64(classField(cl, false), c)
	if sh.entryExpireAt(b) != 0 {
		sh.addI64(classField(cl, true), c)
	}
}

// holdData moves the data of the session of lockKey (of kind, the
// caller's kindOf(lockKey)), if there and not pinned, out of its class
// (sign -1: the lock arrives, the data is held) or back into it (sign 1:
// the lock left). Caller holds the lock, around the lock entry's insertion
// or removal.
func (sh *shard) holdData(kind contract.KeyKind, lockKey string, sign int64) {
	if kind != contract.KindSessionLock {
		return
	}
	d := sh.pairBlock(contract.KindSessionLock, lockKey)
	if d == noBlock || sh.entryPinned(d) {
		return
	}
	unheld := func() bool { return false } // its class while the lock is away
	cl := contract.ClassOf(contract.KindSession, false, sh.entryMeta(d)&flagRead != 0, unheld)
	sh.tallyClass(d, cl, sign*chargeOf(sh.blockSize(d)))
}

// markRead sets flagRead on the session data b, moving it from new to
// returned. Caller holds the lock.
func (sh *shard) markRead(b int64) {
	cl, _ := sh.classOf(b)
	c := chargeOf(sh.blockSize(b))
	if cl == contract.EvictNew {
		sh.tallyClass(b, contract.EvictNew, -c)
	}
	p := sh.hu32(b + 20)
	storeRel32(p, atomic.LoadUint32(p)|flagRead)
	if cl == contract.EvictNew {
		sh.tallyClass(b, contract.EvictReturned, c)
	}
}

// sessionLimit is the session budget in force (0: none).
func (s *Store) sessionLimit() int64 { return atomic.LoadInt64(s.g.i64(hSessLimit)) }

// sessionBytes sums the bytes charged to session data in every shard not
// broken (as reserved does: a broken shard's count may be its damage).
func (s *Store) sessionBytes() int64 {
	var n int64
	for i := range s.shards {
		if s.shards[i].isBroken() {
			continue
		}
		n += atomic.LoadInt64(s.shards[i].sessUsed())
	}
	return n
}

// sessionShare is the most session data one shard may hold under the
// budget in force, limit bytes (0: none): an even split of it over the
// shards and a quarter more, at most the budget. A shard's heap holds
// 1.25 × memory_limit / S, so the share leaves every shard's other keys
// and locks 1.25 × (memory_limit − budget) / S, the same part of its heap
// as the budget leaves them of the limit (half, at the default budget):
// session ids that land in one shard, whoever chose them, fill only its
// share, and locks and cache writes there keep their room. The quarter
// is slack for ids spread at random (the hash is seeded): with 200
// sessions a shard the fullest of 32 shards is a quarter above the mean
// about once in 200 fillings, so the share bites before the budget only
// for a budget held by a few sessions each shard, and then it evicts that
// shard's own never-read sessions a little early, as the budget would.
func (s *Store) sessionShare(limit int64) int64 {
	if limit <= 0 {
		return 0
	}
	return min(limit, (limit+limit/4)/int64(len(s.shards)))
}

// takeBudget decides whether delta more bytes of session data fit in sh:
// the one place session data's limits are applied. They must fit in sh's
// share of the budget (sessionShare), else it answers overShare, and in
// the budget summed over every shard, else overBudget; then it holds
// nothing. If they fit it answers fits holding the budget's lock word,
// and the caller charges them to sh and then calls giveBudget. Caller
// holds sh's lock, which guards sh's tally.
func (s *Store) takeBudget(sh *shard, delta int64) room {
	// A share that is the whole budget (one shard) is the budget's check.
	if limit := s.sessionLimit(); limit > 0 {
		if share := s.sessionShare(limit); share < limit && atomic.LoadInt64(sh.sessUsed())+delta > share {
			return overShare
		}
	}
	if tookOver, began := s.g.lockWord(s.g.u32(hBudgetLock), s.tag); tookOver {
		s.noteDeadOwnerWait(now() - began) // it guards no data: nothing to recover
	}
	if limit := s.sessionLimit(); limit > 0 && s.sessionBytes()+delta > limit {
		unlockWord(s.g.u32(hBudgetLock))
		return overBudget
	}
	return fits
}

func (s *Store) giveBudget() { unlockWord(s.g.u32(hBudgetLock)) }
