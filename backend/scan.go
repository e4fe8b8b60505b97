package backend

import (
	"strings"
	"time"
)

// The walk of a store's entries (Scanner, which every Backend is: the
// scan member of include/ephpm_kv.h, the ephpm command's keys and locks,
// its RESP endpoint's SCAN, the status page's key browser), and what a
// tool needs beyond the table's members (CondSetter: optional, a caller
// asks with a type assertion).

// KeyInfo is one live entry as a walk of the store saw it, at one instant
// of its own (each entry is read under its shard's lock or its server's
// step; a page is not one snapshot).
type KeyInfo struct {
	Key string
	// Size is the value's length in bytes as GetInto returns it (of the
	// decompressed value); -1 when the store cannot say (a Redis key that
	// holds no string).
	Size int64
	// TTL is the time left, -1 for none.
	TTL time.Duration
	// Lock is true for an entry the store keeps as a lock (stored by
	// set_nx or lock_acquire, or a session's lock: never evicted).
	Lock bool
	// Readers is the read holds of a read-held lock (a reader record);
	// 0 for an exclusive lock or a value.
	Readers int
	// HolderPID is the process the store records as the lock's holder
	// (a session lock taken by the session handler on a shared-memory
	// segment); 0 when the store records none.
	HolderPID int
	// Waiters is how many callers wait for the key to be free; -1 when
	// the store cannot say (on Redis, outside a walk of locks).
	Waiters int
}

// Kind is what an entry of a walk is, as the scan member's records
// (EPHPM_KV_SCAN_*) and the ephpm command name it: the one place that
// reads a KeyInfo's fields as a kind.
type Kind uint32

const (
	KindValue      Kind = iota // a value
	KindLock                   // a lock held exclusively (set_nx, lock_acquire, a session's lock)
	KindSharedLock             // a lock held for reading (Readers holds)
	KindSession                // a session's data (the session handler's data prefix)
)

// Kind is k's kind; sessionData is the session handler's data prefix
// ("": no entry is session data).
func (k KeyInfo) Kind(sessionData string) Kind {
	switch {
	case k.Lock && k.Readers > 0:
		return KindSharedLock
	case k.Lock:
		return KindLock
	case sessionData != "" && strings.HasPrefix(k.Key, sessionData):
		return KindSession
	}
	return KindValue
}

// Holders is how many hold k: 1 for an exclusive lock, the read holds of
// a shared one, 0 for a value or session data.
func (k KeyInfo) Holders() int {
	switch {
	case k.Lock && k.Readers > 0:
		return k.Readers
	case k.Lock:
		return 1
	}
	return 0
}

func (k Kind) String() string {
	switch k {
	case KindLock:
		return "lock"
	case KindSharedLock:
		return "shared lock"
	case KindSession:
		return "session"
	}
	return "value"
}

// ScanPage is one page of a walk.
type ScanPage struct {
	Keys []KeyInfo
	// Next is the cursor of the next page; 0 when the walk is complete.
	Next uint64
	// Skipped names the parts of the store the walk found damaged and
	// went on past (a corrupt shard of a segment), each with why; their
	// entries are not in any page. A caller that shows or counts keys
	// must say so: the walk is not the store's whole content.
	Skipped []string
}

// Scanner walks a store's live entries page by page. Every Backend is one
// (the scan member).
type Scanner interface {
	// Scan returns the page that begins at cursor (0: the first) with
	// about count of the entries whose key begins with prefix (a page may
	// hold fewer, or none, with the walk not complete; it may hold more
	// on Redis, whose SCAN takes count as a hint), only locks with
	// locksOnly. An entry live for the whole
	// walk is returned at least once; one written or removed during it
	// may be returned or not, and an entry may be returned twice. A
	// cursor that names no position of the walk is refused with
	// contract.ErrInvalidArgument. Any error but damage the walk goes past
	// (ScanPage.Skipped) is the page's error, with no page: the page's
	// outcome is unknown, never an empty or final page.
	// It changes nothing in the store (an expired entry it meets is left
	// for the store's own sweep), and it never blocks other callers for
	// more than one page's worth of entries.
	Scan(prefix string, cursor uint64, count int, locksOnly bool) (ScanPage, error)
}

// SetCondition is when a conditional set stores.
type SetCondition int

const (
	// SetAlways stores whatever the key holds (SET ... GET), as Set
	// does: a plain overwrite, which keeps nothing of a lock it replaces.
	SetAlways SetCondition = iota
	// SetIfAbsent stores only if the key holds no live entry, as SetNX
	// does: the entry is a lock, never evicted (SET ... NX GET).
	SetIfAbsent
	// SetIfEqual stores only if the key holds a live entry whose value
	// equals the comparison value (Valkey's SET ... IFEQ): a missing or
	// expired key is never created. It is how a holder renews a lock
	// (SET key token IFEQ token PX ttl), so a lock it replaces stays one:
	// as ExpireIfEq, the store keeps what it keeps of a lock (never
	// evicted, its recorded holder).
	SetIfEqual
)

// CondSetter is a store with a conditional set that can also return the
// value it replaced.
type CondSetter interface {
	// SetCond stores value under key with ttl (0: none) if cond holds for
	// key's live entry (SetIfEqual: compared with cmp), deciding and
	// storing in one atomic step, and reports whether it stored. With get,
	// old is a copy of the value key held just before that step (found
	// false, old nil: no live entry), whether or not it stored. Errors are
	// as Backend's: contract.ErrInvalidArgument or contract.ErrNoMemory mean
	// nothing changed. It may block only as a Set does (making room).
	SetCond(key string, value []byte, ttl time.Duration, cond SetCondition, cmp []byte, get bool) (stored bool, old []byte, found bool, err error)
}
