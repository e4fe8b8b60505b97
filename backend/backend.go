// Package backend defines what serves the ops table: the Backend interface,
// its in-process implementation Memory, and (in backendtest) the contract
// every implementation must pass.
package backend

import (
	"time"

	"github.com/ephpm/ephpm/kv"
)

// Backend serves the table's members; each method is the member of the
// same name in include/ephpm_kv.h. Every method is safe for concurrent
// use and states its outcome or fails. An error wrapping
// kv.ErrInvalidArgument, kv.ErrNoMemory, kv.ErrNotInteger or kv.ErrOverflow
// means nothing changed; any other error means the outcome is unknown.
type Backend interface {
	// GetInto copies a live entry's value into dst if it fits and returns
	// its length either way (n > len(dst): nothing copied).
	GetInto(key string, dst []byte) (n int, found bool, err error)
	Set(key string, value []byte, ttl time.Duration) error
	SetNX(key string, value []byte, ttl time.Duration) (kv.SetNXOutcome, error)
	Del(key string) (bool, error)
	DelIfEq(key string, token []byte) (bool, error)
	// Wait blocks for at most timeout until key holds no live entry and
	// reports whether it is free (see kv.Store.Wait).
	Wait(key string, timeout time.Duration) (bool, error)
	SetGuarded(key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error)
	// DelGuarded removes key only while guardKey holds guardToken, in one
	// atomic step, and reports whether the guard held.
	DelGuarded(key, guardKey string, guardToken []byte) (bool, error)
	Expire(key string, ttl time.Duration) (bool, error)
	Exists(key string) (bool, error)
	// PTTL returns the remaining TTL, -1 for none; found is false if there
	// is no live entry.
	PTTL(key string) (ttl time.Duration, found bool, err error)
	ExpireIfEq(key string, token []byte, ttl time.Duration) (bool, error)
	IncrBy(key string, delta int64, ttlOnCreate time.Duration) (int64, error)
	// GetMany writes the get_many value record of each key, in order, into
	// dst if they all fit, and returns their total length either way
	// (n > len(dst): dst holds nothing usable). Each key is read on its own.
	GetMany(keys []string, dst []byte) (n int, err error)
	// SetMany stores values[i] under keys[i] with ttl, in order, each
	// atomically on its own, after checking them all (CheckBatch: a bad
	// entry writes nothing). It returns how many leading entries are
	// stored; on an error, the entry at that index failed (include/
	// ephpm_kv.h, set_many, says what the entries after it hold).
	SetMany(keys []string, values [][]byte, ttl time.Duration) (stored int, err error)
	// SetNXFenced is SetNX that also mints, in the same atomic step, the
	// grant's fencing token: a number strictly greater than that of every
	// earlier fenced grant of key, never reset by the lock's release,
	// expiry or eviction, nor by Flush. fence is 0 when key was held.
	SetNXFenced(key string, value []byte, ttl time.Duration) (out kv.SetNXOutcome, fence int64, err error)
	// Fence is the latest fence granted for name, 0 if none was.
	Fence(name string) (int64, error)
	// SetFenced stores value under key only while fence is still the
	// latest grant of lock, in one atomic step, and reports whether it did.
	SetFenced(key string, value []byte, ttl time.Duration, lock string, fence int64) (bool, error)
	// DelFenced removes key only while fence is still the latest grant of
	// lock, in one atomic step, and reports whether the fence held.
	DelFenced(key, lock string, fence int64) (bool, error)
	// SetNXGet is one attempt of set_nx_wait_get: SetNX of key, and once
	// inserted, GetInto of dataKey (n, found as GetInto returns them).
	// Nothing is read when the lock is not inserted.
	SetNXGet(key string, value []byte, ttl time.Duration, dataKey string, dst []byte) (out kv.SetNXOutcome, n int, found bool, err error)
	// SetGuardedRelease is SetGuarded of key, and if the guard held,
	// DelIfEq of guardKey with guardToken; it reports whether the guard
	// held (false: nothing changed).
	SetGuardedRelease(key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error)
	// SetNXGetFenced is SetNXGet whose grant also mints its fence, as
	// SetNXFenced does, in the same sequence (fence 0 when not inserted).
	SetNXGetFenced(key string, value []byte, ttl time.Duration, dataKey string, dst []byte) (out kv.SetNXOutcome, n int, found bool, fence int64, err error)
	// SetFencedRelease stores value under key only while fence is still
	// the latest grant of lock and lock holds no live entry other than
	// token, in one atomic step, and then releases lock if it holds token
	// (DelIfEq); it reports whether it wrote (false: nothing changed).
	SetFencedRelease(key string, value []byte, ttl time.Duration, lock string, fence int64, token []byte) (bool, error)
	// DelFencedRelease is SetFencedRelease that removes key instead of
	// writing it (as DelFenced removes).
	DelFencedRelease(key, lock string, fence int64, token []byte) (bool, error)
	// LockAttempt is one attempt of lock_acquire: kv.DecideAcquire applied
	// to key's entry in one atomic step (the hold lapsing ttl from now, 0:
	// never; a refused exclusive attempt's claim lapsing claim from now, 0:
	// none), minting the grant's fence in that step (the sequence
	// SetNXFenced mints from), storing or removing as the decision says
	// (a stored record or token is a lock: never evicted), then waking as
	// it says. fence is 0 unless out is kv.Inserted.
	LockAttempt(key string, token []byte, mode kv.LockMode, ttl, claim time.Duration) (out kv.SetNXOutcome, fence int64, err error)
	// LockRelease applies kv.DecideRelease; it reports whether token held
	// key.
	LockRelease(key string, token []byte) (bool, error)
	// LockRefresh applies kv.DecideRefresh with the deadline ttl from now
	// (0: none); it reports whether token held key.
	LockRefresh(key string, token []byte, ttl time.Duration) (bool, error)
	// LockInfo is kv.LockHolders of key's live entry (holders 0: free).
	LockInfo(key string) (mode kv.LockMode, holders int, err error)

	// ExpireGuardedRelease is, while guardKey holds guardToken, Expire of
	// key, and if key was live, DelIfEq of guardKey with guardToken; it
	// reports whether both happened (false: nothing changed).
	ExpireGuardedRelease(key string, ttl time.Duration, guardKey string, guardToken []byte) (bool, error)
	Flush() error
	Stats() (kv.Stats, error)
	// Name is the backend's kind, as stats report it ("memory", "redis").
	Name() string
	// Close releases what the backend holds (connections); it is called
	// when the table stops serving it.
	Close() error

	// Scanner is the scan member's walk (scan.go); the bridge writes its
	// pages as the header's records (bridge/scan.go).
	Scanner
}

// Revalidator is a Backend whose store can be taken away from under a
// running process: a shared-memory segment whose file was removed
// (shm.Store.Revalidate). The begin_request member calls Revalidate as each
// request begins; an error fails that member, and the backend fails every
// later call with it. A Backend that is not one answers begin_request OK.
type Revalidator interface {
	Revalidate() error
}
