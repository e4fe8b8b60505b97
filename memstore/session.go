package memstore

import (
	"fmt"
	"strings"
	"sync/atomic"
	"unsafe"
)

// KeyKind says what the session rule (Options.SessionDataPrefix and
// SessionLockPrefix) makes of a key.
type KeyKind uint8

const (
	KindPlain       KeyKind = iota // not a session key
	KindSession                    // session data: SessionDataPrefix + sid
	KindSessionLock                // a session's lock: SessionLockPrefix + sid
)

// SessionRule knows the session keys. The two keys of one session, its
// data and its lock, hash by the sid alone, so they share a shard and a
// hash: whether a session is held (its lock is there) is one lookup under
// the lock the caller already holds, and changes in step with the lock.
// The shared-memory store applies the same rule (package shm).
type SessionRule struct {
	// prefixes lists the configured prefixes, the longer first (one may
	// begin with the other), with the kind of key each starts.
	prefixes [2]sessionPrefix
	n        int
	// first marks the first bytes of the prefixes: most keys are told
	// apart from session keys by one load.
	first [256]bool
	data  string // the data prefix, "" if none
	lock  string // the lock prefix, "" if none
	// limitName names the session budget in error messages.
	limitName string
}

type sessionPrefix struct {
	prefix string
	kind   KeyKind
}

// NewSessionRule makes the rule of opts' SessionDataPrefix,
// SessionLockPrefix and SessionLimitName.
func NewSessionRule(opts Options) SessionRule {
	r := SessionRule{data: opts.SessionDataPrefix, lock: opts.SessionLockPrefix, limitName: opts.SessionLimitName}
	if r.limitName == "" {
		r.limitName = "session_memory_limit"
	}
	if r.data == "" || r.lock == r.data {
		r.lock = "" // without session data (or apart from it) nothing is held
	}
	for _, p := range []sessionPrefix{{r.data, KindSession}, {r.lock, KindSessionLock}} {
		if p.prefix != "" {
			r.prefixes[r.n] = p
			r.n++
			r.first[p.prefix[0]] = true
		}
	}
	if r.n == 2 && len(r.prefixes[1].prefix) > len(r.prefixes[0].prefix) {
		r.prefixes[0], r.prefixes[1] = r.prefixes[1], r.prefixes[0]
	}
	return r
}

// Prefixes returns the data and lock prefixes in force ("": none).
func (r *SessionRule) Prefixes() (data, lock string) { return r.data, r.lock }

// MayBeSession reports whether a key that starts with byte c may be a
// session key: false for most keys, told by one load.
func (r *SessionRule) MayBeSession(c byte) bool { return r.first[c] }

// Split returns key's kind and the part of it that is hashed: the sid of
// a session key, the whole of any other.
func (r *SessionRule) Split(key string) (KeyKind, string) {
	if len(key) == 0 || !r.first[key[0]] {
		return KindPlain, key
	}
	for _, p := range r.prefixes[:r.n] {
		if strings.HasPrefix(key, p.prefix) {
			return p.kind, key[len(p.prefix):]
		}
	}
	return KindPlain, key
}

// Kind returns key's kind.
func (r *SessionRule) Kind(key string) KeyKind {
	k, _ := r.Split(key)
	return k
}

// Pair appends to dst the other key of the session of key, of kind (the
// lock of session data, the data of a lock), and returns it, or nil if
// key is not a session key or its session has no such key.
func (r *SessionRule) Pair(dst []byte, kind KeyKind, key string) []byte {
	var other, prefix string
	switch kind {
	case KindSession:
		other, prefix = r.lock, r.data
	case KindSessionLock:
		other, prefix = r.data, r.lock
	default:
		return nil
	}
	if other == "" {
		return nil
	}
	return append(append(dst, other...), key[len(prefix):]...)
}

// Budget checks cfg's session budget and returns the one in force: the
// budget, or half of a Limit that is set when it is 0 (no budget without a
// Limit). It must be below a Limit that is set.
func (r *SessionRule) Budget(cfg MemoryConfig) (int64, error) {
	if cfg.SessionLimit < 0 {
		return 0, fmt.Errorf("%w: %s %d is negative", ErrInvalidArgument, r.limitName, cfg.SessionLimit)
	}
	if cfg.Limit > 0 && cfg.SessionLimit >= cfg.Limit {
		return 0, fmt.Errorf("%w: %s %d is not below the memory limit %d: other keys and locks need room that sessions cannot take",
			ErrInvalidArgument, r.limitName, cfg.SessionLimit, cfg.Limit)
	}
	if cfg.SessionLimit == 0 && cfg.Limit > 0 {
		return max(cfg.Limit/2, 1), nil
	}
	return cfg.SessionLimit, nil
}

// OverBudget is the error of a session write that the budget in force,
// limit bytes, refuses.
func (r *SessionRule) OverBudget(limit int64) error {
	return fmt.Errorf("%w: session data would exceed %s (%d bytes)", ErrNoMemory, r.limitName, limit)
}

// OverShare is the error of a session write that one shard's share of the
// budget refuses: share bytes of a budget of limit bytes over shards
// shards (a store whose shards each have a heap of their own: package
// shm).
func (r *SessionRule) OverShare(share, limit int64, shards int) error {
	return fmt.Errorf("%w: session data in one shard would exceed its share of %s (%d of %d bytes over %d shards)",
		ErrNoMemory, r.limitName, share, limit, shards)
}

// pairOf returns the block of the other key of key's session (the lock of
// session data, the data of a lock), or nil if it is not in the table or
// key is not a session key. It has the same hash h. Caller holds sh.mu.
func (s *Store) pairOf(sh *shard, h uint32, kind KeyKind, key string) block {
	var buf [96]byte // most keys fit: no allocation
	k := s.sess.Pair(buf[:0], kind, key)
	if k == nil {
		return nil
	}
	return sh.t.get(h, unsafe.String(unsafe.SliceData(k), len(k)))
}

// An entry's eviction slot says under which policy and in which order
// eviction may take it: slot 2*class + 1 for an entry with a TTL, 2*class
// for one without, and slotKept for an entry never evicted (a lock, a
// pinned key, the data of a session whose lock is there). Each shard adds
// up the memory charged to the entries of each evictable slot
// (shard.evictable), so the store knows how much eviction could free
// before it frees anything; what is kept is not counted, so a lock taken
// and released counts nothing.
type class uint8

const (
	classPlain    class = iota // not session data
	classNew                   // session data not read since it was written
	classReturned              // session data read since it was written
	numClasses
)

const (
	numSlots = 2 * int(numClasses) // evictable slots
	slotKept = numSlots
)

// slots returns the range [lo, hi] of the slots of class c that policy
// may evict.
func slots(c class, policy Policy) (lo, hi int) {
	lo, hi = 2*int(c), 2*int(c)+1
	if policy == VolatileLRU {
		lo = hi
	}
	return lo, hi
}

func blockCost(b block) int64 { return int64(blockSize(b)) + entryOverhead }

// slotOf returns the eviction slot of b, whose key is of kind and hashes
// to h. Caller holds sh.mu.
func (s *Store) slotOf(sh *shard, b block, kind KeyKind, h uint32) int {
	if kind == KindSession {
		return s.sessionSlot(sh, b, h)
	}
	return plainSlot(b)
}

// plainSlot is slotOf for a key that is not session data.
func plainSlot(b block) int {
	switch {
	case blockMeta(b)&flagPinned != 0:
		return slotKept
	case blockExpireAt(b) != 0:
		return 1
	}
	return 0
}

// sessionSlot is slotOf for session data.
func (s *Store) sessionSlot(sh *shard, b block, h uint32) int {
	slot := plainSlot(b)
	switch {
	case slot == slotKept:
	case s.pairOf(sh, h, KindSession, blockKey(b)) != nil:
		slot = slotKept // held: a request is using it
	case blockFlags(b, flagRead):
		slot += 2 * int(classReturned)
	default:
		slot += 2 * int(classNew)
	}
	return slot
}

// tally takes b's cost (blockCost) away from its slot's total (sign -1) or
// adds it (1). Every change to what decides a slot (the entry entering or
// leaving the table, its TTL, its read flag, its session's lock coming or
// going) is bracketed by a tally of -1 before and of 1 after. The hot
// paths call tallyPlain instead for keys that are not session data, which
// inlines. Caller holds sh.mu.
func (s *Store) tally(sh *shard, b block, kind KeyKind, h uint32, sign int64) {
	if kind == KindSession {
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
	if slot := s.sessionSlot(sh, b, h); slot != slotKept {
		sh.evictable[slot] += sign * blockCost(b)
	}
}

// untallyData takes the data of lock key's session, if there, out of its
// slot's total and returns it, before the lock enters or leaves the table,
// which moves the data to another slot; the caller then tallies it again.
// Caller holds sh.mu.
func (s *Store) untallyData(sh *shard, h uint32, key string) block {
	d := s.pairOf(sh, h, KindSessionLock, key)
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
