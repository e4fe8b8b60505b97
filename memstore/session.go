package memstore

import (
	"sync/atomic"
	"unsafe"

	"github.com/ephpm/ephpm/contract"
)

// pairOf returns the block of the other key of key's session (the lock of
// session data, the data of a lock), or nil if it is not in the table or
// key is not a session key. It has the same hash h. Caller holds sh.mu.
func (s *Store) pairOf(sh *shard, h uint32, kind contract.KeyKind, key string) block {
	var buf [96]byte // most keys fit: no allocation
	k := s.sess.Pair(buf[:0], kind, key)
	if k == nil {
		return nil
	}
	return sh.t.get(h, unsafe.String(unsafe.SliceData(k), len(k)))
}

// An entry's eviction slot says under which policy and in which order
// eviction may take it: slot 2*class + 1 for an entry with a TTL, 2*class
// for one without (its class: contract.ClassOf), and slotKept for an entry
// never evicted (contract.EvictKept). Each shard adds up the memory
// charged to the entries of each evictable slot (shard.evictable), so the
// store knows how much eviction could free before it frees anything; what
// is kept is not counted, so a lock taken and released counts nothing.
const (
	numSlots = 2 * int(contract.NumEvictClasses) // evictable slots
	slotKept = numSlots
)

// slots returns the range [lo, hi] of the slots of class c that policy
// may evict.
func slots(c contract.EvictClass, policy contract.Policy) (lo, hi int) {
	lo, hi = 2*int(c), 2*int(c)+1
	if policy == contract.VolatileLRU {
		lo = hi
	}
	return lo, hi
}

func blockCost(b block) int64 { return int64(blockSize(b)) + entryOverhead }

// slotOf returns the eviction slot of b, whose key is of kind and hashes
// to h. Caller holds sh.mu.
func (s *Store) slotOf(sh *shard, b block, kind contract.KeyKind, h uint32) int {
	held := func() bool { return s.pairOf(sh, h, contract.KindSession, blockKey(b)) != nil }
	return slotIn(contract.ClassOf(kind, blockMeta(b)&flagPinned != 0, blockFlags(b, flagRead), held), b)
}

// plainSlot is slotOf for a key that is not session data: contract.ClassOf
// of such a key, kept if pinned and plain otherwise, written out so that
// it inlines into the hot paths' tallyPlain.
func plainSlot(b block) int {
	if blockMeta(b)&flagPinned != 0 {
		return slotKept
	}
	return slotIn(contract.EvictPlain, b)
}

// slotIn is the slot of b in class c.
func slotIn(c contract.EvictClass, b block) int {
	if c == contract.EvictKept {
		return slotKept
	}
	if blockExpireAt(b) != 0 {
		return 2*int(c) + 1
	}
	return 2 * int(c)
}

// tally takes b's cost (blockCost) away from its slot's total (sign -1) or
// adds it (1). Every change to what decides a slot (the entry entering or
// leaving the table, its TTL, its read flag, its session's lock coming or
// going) is bracketed by a tally of -1 before and of 1 after. The hot
// paths call tallyPlain instead for keys that are not session data, whose
// slot (plainSlot) inlines. Caller holds sh.mu.
func (s *Store) tally(sh *shard, b block, kind contract.KeyKind, h uint32, sign int64) {
	if kind == contract.KindSession {
		s.tallySession(sh, b, h, sign)
	} else {
		sh.tallyPlain(b, sign)
	}
}

// tallyPlain is tally for a key that is not session data.
func (sh *shard) tallyPlain(b block, sign int64) {
	if slot := plainSlot(b); slot != slotKept {
		sh.evictable[slot] += sign * blockCost(b)
	}
}

// tallySession is tally for session data.
func (s *Store) tallySession(sh *shard, b block, h uint32, sign int64) {
	if slot := s.slotOf(sh, b, contract.KindSession, h); slot != slotKept {
		sh.evictable[slot] += sign * blockCost(b)
	}
}

// untallyData takes the data of lock key's session, if there, out of its
// slot's total and returns it, before the lock enters or leaves the table,
// which moves the data to another slot; the caller then tallies it again.
// Caller holds sh.mu.
func (s *Store) untallyData(sh *shard, h uint32, key string) block {
	d := s.pairOf(sh, h, contract.KindSessionLock, key)
	if d != nil {
		s.tallySession(sh, d, h, -1)
	}
	return d
}

// markRead flags session data b as read since it was written: it is a
// returning user's, and eviction takes it only after every session not
// read back. Readers outside the lock load the header atomically, so the
// flag is set atomically. Caller holds sh.mu.
func (s *Store) markRead(sh *shard, b block, h uint32) {
	s.tallySession(sh, b, h, -1)
	atomic.OrUint32(blockMetaPtr(b), flagRead)
	s.tallySession(sh, b, h, 1)
}
