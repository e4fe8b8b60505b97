package contract

import (
	"fmt"
	"strings"
)

// KeyKind says what the session rule (SessionRule) makes of a key.
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
// The in-process store (package memstore) and the shared-memory store
// (package shm) apply the same rule.
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

// NewSessionRule makes the rule whose session data is under dataPrefix+sid
// and whose locks are under lockPrefix+sid ("": none), its budget named
// limitName in error messages ("": "session_memory_limit").
func NewSessionRule(dataPrefix, lockPrefix, limitName string) SessionRule {
	r := SessionRule{data: dataPrefix, lock: lockPrefix, limitName: limitName}
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
