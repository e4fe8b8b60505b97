// Eviction: which entries a write that does not fit may take away, and in
// what order. A store counts, per shard, the bytes of each class that
// eviction could take (apart from those with a TTL, for VolatileLRU), so
// that it knows whether eviction can make a write fit before it evicts
// anything; each store keeps those counts its own way.

package contract

// EvictClass is an entry's eviction class: which writes may evict it, and
// after which others.
type EvictClass uint8

const (
	// EvictPlain: an entry that is not session data.
	EvictPlain EvictClass = iota
	// EvictNew: session data not read since it was written.
	EvictNew
	// EvictReturned: session data read since it was written (a returning
	// user's), evicted only after every EvictNew entry.
	EvictReturned
	// NumEvictClasses counts the classes eviction takes from.
	NumEvictClasses
	// EvictKept: never evicted. An entry under a pinned prefix, a lock
	// (SetNX and every grant store locks pinned), and session data whose
	// session's lock is there: a request is using it.
	EvictKept = NumEvictClasses
)

var evictClassNames = [...]string{"plain", "new session", "returned session", "kept"}

func (c EvictClass) String() string {
	if int(c) < len(evictClassNames) {
		return evictClassNames[c]
	}
	return "EvictClass(?)"
}

// ClassOf is the class of an entry whose key is of kind: pinned if it is
// never evicted (a lock, a pinned prefix), read if it is session data read
// since it was written. held reports whether the session's lock is there;
// ClassOf calls it only for session data that is not pinned, so the
// lookup it costs is paid by nothing else (held may be nil for a key of
// another kind).
func ClassOf(kind KeyKind, pinned, read bool, held func() bool) EvictClass {
	switch {
	case pinned:
		return EvictKept
	case kind != KindSession:
		return EvictPlain
	case held():
		return EvictKept
	case read:
		return EvictReturned
	}
	return EvictNew
}

var (
	plainOrder   = []EvictClass{EvictPlain}
	sessionOrder = []EvictClass{EvictPlain, EvictNew, EvictReturned}
	budgetOrder  = []EvictClass{EvictNew, EvictReturned}
)

// EvictOrder is the classes a write of a key of kind may evict to make
// room under the store's limit, in order (the next only once the one
// before has nothing left to take): only session data makes session data
// go. The caller must not change the slice.
func EvictOrder(kind KeyKind) []EvictClass {
	if kind == KindSession {
		return sessionOrder
	}
	return plainOrder
}

// BudgetEvictOrder is the classes evicted, in order, to bring session data
// within its budget (MemoryConfig.SessionLimit): session data only, new
// before returned. The caller must not change the slice.
func BudgetEvictOrder() []EvictClass { return budgetOrder }

// Evicts reports whether p may evict an entry of an evictable class that
// has a TTL (ttl) or has none.
func (p Policy) Evicts(ttl bool) bool {
	return p == AllKeysLRU || p == VolatileLRU && ttl
}
