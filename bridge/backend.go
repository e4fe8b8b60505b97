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
)

// Backend is what the table's members call. Every method is safe for
// concurrent use and must state its outcome or fail: an error means the
// outcome is unknown unless it wraps kv.ErrInvalidArgument, in which case
// nothing changed.
type Backend interface {
	// Get returns the value of a live entry. The slice is read-only for
	// the caller and may be shared.
	Get(key string) ([]byte, bool, error)
	Set(key string, value []byte, ttl time.Duration) error
	SetNX(key string, value []byte, ttl time.Duration) (kv.SetNXOutcome, error)
	Del(key string) (bool, error)
	DelIfEq(key string, token []byte) (bool, error)
	// Wait blocks for at most timeout until key holds no live entry and
	// reports whether it is free (see kv.Store.Wait).
	Wait(key string, timeout time.Duration) (bool, error)
	SetGuarded(key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error)
	Expire(key string, ttl time.Duration) (bool, error)
}

// memory adapts the in-process store, whose reads and deletes cannot fail.
type memory struct{ *kv.Store }

func (m memory) Get(key string) ([]byte, bool, error) {
	v, ok := m.Store.Get(key)
	return v, ok, nil
}

func (m memory) Del(key string) (bool, error) { return m.Store.Del(key), nil }

func (m memory) DelIfEq(key string, token []byte) (bool, error) {
	return m.Store.DelIfEq(key, token), nil
}

func (m memory) Wait(key string, timeout time.Duration) (bool, error) {
	return m.Store.Wait(key, timeout), nil
}

var (
	store   = kv.New(kv.Options{})
	backend atomic.Pointer[Backend]
)

func init() { SetBackend(memory{store}) }

// Store returns this process's in-process store: the one the table serves
// unless SetBackend chose another. A Go program that embeds PHP reads and
// writes it directly, sharing entries and locks with its PHP scripts.
func Store() *kv.Store { return store }

// SetBackend makes the table serve b from the next call on.
func SetBackend(b Backend) { backend.Store(&b) }

func current() Backend { return *backend.Load() }
