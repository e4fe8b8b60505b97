// Package backend defines what serves the ops table: the Backend interface,
// its in-process implementation Memory, and (in backendtest) the contract
// every implementation must pass.
package backend

import (
	"time"

	"github.com/ephpm/ephpm/contract"
)

// Backend serves the table's members; each method is the member of the
// same name in include/ephpm_kv.h, but Step, which serves the members
// that fuse a lock with a read or a write (step.go). Every method is safe for concurrent
// use and states its outcome or fails. An error wrapping
// contract.ErrInvalidArgument, contract.ErrNoMemory, contract.ErrNotInteger
// or contract.ErrOverflow means nothing changed; any other error means the
// outcome is unknown.
type Backend interface {
	// GetInto copies a live entry's value into dst if it fits and returns
	// its length either way (n > len(dst): nothing copied).
	GetInto(key string, dst []byte) (n int, found bool, err error)
	Set(key string, value []byte, ttl time.Duration) error
	SetNX(key string, value []byte, ttl time.Duration) (contract.SetNXOutcome, error)
	Del(key string) (bool, error)
	DelIfEq(key string, token []byte) (bool, error)
	// Wait blocks for at most timeout until key holds no live entry and
	// reports whether it is free (see memstore.Store.Wait).
	Wait(key string, timeout time.Duration) (bool, error)
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
	// Fence is the latest fence granted for name, 0 if none was.
	Fence(name string) (int64, error)
	// Step applies s, one atomic attempt (contract.Step says what each of its
	// parts does), and sets its outputs. The members that fuse a lock with
	// a read or a write are each one Step (SetNXGet, SetGuardedRelease,
	// ... in this package). Step must keep nothing of s past the call,
	// nor let s itself escape to the heap (go build -gcflags=-m: "s does
	// not escape", or "leaking param content: s"): callers keep it on
	// their stack (Run).
	Step(s *Step) error
	// LockAttempt is one attempt of lock_acquire: contract.DecideAcquire applied
	// to key's entry in one atomic step (the hold lapsing ttl from now, 0:
	// never; a refused exclusive attempt's claim lapsing claim from now, 0:
	// none), minting the grant's fence in that step (the sequence
	// SetNXFenced mints from), storing or removing as the decision says
	// (a stored record or token is a lock: never evicted), then waking as
	// it says. fence is 0 unless out is contract.Inserted.
	LockAttempt(key string, token []byte, mode contract.LockMode, ttl, claim time.Duration) (out contract.SetNXOutcome, fence int64, err error)
	// LockRelease applies contract.DecideRelease; it reports whether token held
	// key.
	LockRelease(key string, token []byte) (bool, error)
	// LockRefresh applies contract.DecideRefresh with the deadline ttl from now
	// (0: none); it reports whether token held key.
	LockRefresh(key string, token []byte, ttl time.Duration) (bool, error)
	// LockInfo is contract.LockHolders of key's live entry (holders 0: free).
	LockInfo(key string) (mode contract.LockMode, holders int, err error)
	Flush() error
	Stats() (contract.Stats, error)
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
