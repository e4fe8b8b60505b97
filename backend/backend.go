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
	// SetNXGet is one attempt of set_nx_wait_get: SetNX of key, and once
	// inserted, GetInto of dataKey (n, found as GetInto returns them).
	// Nothing is read when the lock is not inserted.
	SetNXGet(key string, value []byte, ttl time.Duration, dataKey string, dst []byte) (out kv.SetNXOutcome, n int, found bool, err error)
	// SetGuardedRelease is SetGuarded of key, and if the guard held,
	// DelIfEq of guardKey with guardToken; it reports whether the guard
	// held (false: nothing changed).
	SetGuardedRelease(key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error)
	Flush() error
	Stats() (kv.Stats, error)
	// Name is the backend's kind, as stats report it ("memory", "redis").
	Name() string
	// Close releases what the backend holds (connections); it is called
	// when the table stops serving it.
	Close() error
}
