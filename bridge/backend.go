// Package bridge serves a key-value Backend to C through the ops table of
// include/ephpm_kv.h.
//
// The table, each member's C wrapper (members.c) and its Go side
// (exports_gen.go) are generated from the header's struct (go generate;
// see package memberlist); fork_guard.c holds the fork guard and the members
// written in C; args.go and answers.go what every Go side shares. Linking
// this package into a program makes that program a provider: cmd/libephpm
// packages it as a c-shared library for PHP, and a Go program that embeds
// PHP imports it to serve the same table from its own runtime (a process
// must never hold two Go runtimes).
package bridge

//go:generate go run ./internal/memberlist/gen

import (
	"sync/atomic"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/memstore"
	"github.com/ephpm/ephpm/redisstore"
	"github.com/ephpm/ephpm/sessionkeys"
)

// Backend is what the table's members call (see package backend).
type Backend = backend.Backend

// sessionPrefixes are the prefixes of the session protocol's keys (package
// sessionkeys): the rules each backend is told about them live here. Redis
// keeps a session's data and lock in one Cluster slot and refuses to work
// on them while a master may evict (redisOptions); the in-process store
// and a shared-memory segment keep session data within its budget
// (sessionRule).
var sessionPrefixes = []string{sessionkeys.DataPrefix, sessionkeys.LockPrefix}

// sessionRule is the session rule of the in-process store, which a
// shared-memory segment applies too: session data lives within its
// budget, and only while no request holds its lock may it be evicted;
// locks never are.
var sessionRule = memstore.Options{
	SessionDataPrefix: sessionkeys.DataPrefix,
	SessionLockPrefix: sessionkeys.LockPrefix,
	SessionLimitName:  "ephpm.session_memory_limit",
}

// redisOptions are the key rules a Redis backend is opened with, and near
// its near cache. A session's lock is a lock to the walk (scan), which
// cannot tell it from a value on Redis otherwise.
func redisOptions(near redisstore.NearCache) redisstore.Options {
	return redisstore.Options{Near: near, Colocated: sessionPrefixes, Pinned: sessionPrefixes,
		LockPrefixes: []string{sessionkeys.LockPrefix}}
}

var (
	store  = memstore.New(sessionRule)
	served atomic.Pointer[Backend]
	// lockTimeouts counts set_nx_wait and lock_acquire calls that ran out of
	// time.
	lockTimeouts atomic.Uint64
	// near is the near-cache setting a Redis backend is opened with.
	near redisstore.NearCache
)

func init() {
	b := Backend(backend.Memory{Store: store})
	served.Store(&b)
	setChosen("memory, this process's own (nothing configured)")
}

// Store returns this process's in-process store: the one the table serves
// unless SetBackend chose another. A Go program that embeds PHP reads and
// writes it directly, sharing entries and locks with its PHP scripts.
func Store() *memstore.Store { return store }

// SetBackend makes the table serve b from the next call on, and closes the
// backend it served before.
func SetBackend(b Backend) {
	setChosen(b.Name() + " (set by the host program)")
	if old := served.Swap(&b); old != nil && *old != b {
		(*old).Close()
	}
}

func current() Backend { return *served.Load() }
