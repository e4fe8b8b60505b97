// Package bridge serves a key-value Backend to C through the ops table of
// include/ephpm_kv.h.
//
// The table lives in table.c, which also holds the fork guard; the Go side
// of each member is an exported function in exports.go. Linking this package
// into a program makes that program a provider: cmd/libephpm packages it as
// a c-shared library for PHP, and a Go program that embeds PHP imports it to
// serve the same table from its own runtime (a process must never hold two
// Go runtimes).
package bridge

import (
	"sync/atomic"
	"time"

	"github.com/ephpm/ephpm/kv"
	"github.com/ephpm/ephpm/session"
)

// Backend is what the table's members call; each method is the member of
// the same name in include/ephpm_kv.h. Every method is safe for concurrent
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
	Expire(key string, ttl time.Duration) (bool, error)
	Exists(key string) (bool, error)
	// PTTL returns the remaining TTL, -1 for none; found is false if there
	// is no live entry.
	PTTL(key string) (ttl time.Duration, found bool, err error)
	ExpireIfEq(key string, token []byte, ttl time.Duration) (bool, error)
	IncrBy(key string, delta int64, ttlOnCreate time.Duration) (int64, error)
	Flush() error
	Stats() (kv.Stats, error)
	// Configure sets one setting by name (see the configure member).
	Configure(name, value string) error
	// Name is the backend's kind, as stats report it ("memory").
	Name() string
}

var (
	store = kv.New(kv.Options{
		// Session data and locks must never be evicted to make room.
		PinnedPrefixes: []string{session.DataPrefix, session.LockPrefix},
	})
	backend atomic.Pointer[Backend]
	// lockTimeouts counts set_nx_wait calls that ran out of time.
	lockTimeouts atomic.Uint64
)

func init() { SetBackend(Memory{store}) }

// Store returns this process's in-process store: the one the table serves
// unless SetBackend chose another. A Go program that embeds PHP reads and
// writes it directly, sharing entries and locks with its PHP scripts.
func Store() *kv.Store { return store }

// SetBackend makes the table serve b from the next call on.
func SetBackend(b Backend) { backend.Store(&b) }

func current() Backend { return *backend.Load() }
