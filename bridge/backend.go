// Package bridge serves a key-value Backend to C through the ops table of
// include/ephpm_kv.h.
//
// The table and each member's C wrapper live in members.c, generated from
// the header's struct (go generate); table.c holds the fork guard and the
// members written in C; the Go side of each member is an exported function
// in exports.go. Linking this package
// into a program makes that program a provider: cmd/libephpm packages it as
// a c-shared library for PHP, and a Go program that embeds PHP imports it to
// serve the same table from its own runtime (a process must never hold two
// Go runtimes).
package bridge

//go:generate go run ./internal/memberlist/gen

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/kv"
	"github.com/ephpm/ephpm/redisstore"
	"github.com/ephpm/ephpm/session"
	"github.com/ephpm/ephpm/shm"
)

// Backend is what the table's members call (see package backend).
type Backend = backend.Backend

// shmPinned are the key prefixes a shared-memory segment never evicts to
// make room: session data and locks (it has no session budget).
var shmPinned = []string{session.DataPrefix, session.LockPrefix}

var (
	store = kv.New(kv.Options{
		// Session data lives within its budget, and only while no request
		// holds its lock may it be evicted; locks never are.
		SessionDataPrefix: session.DataPrefix,
		SessionLockPrefix: session.LockPrefix,
		SessionLimitName:  "ephpm.session_memory_limit",
	})
	served atomic.Pointer[Backend]
	// lockTimeouts counts set_nx_wait calls that ran out of time.
	lockTimeouts atomic.Uint64
	// near is the near-cache setting a Redis backend is opened with.
	near redisstore.NearCache
)

func init() { SetBackend(backend.Memory{Store: store}) }

// Store returns this process's in-process store: the one the table serves
// unless SetBackend chose another. A Go program that embeds PHP reads and
// writes it directly, sharing entries and locks with its PHP scripts.
func Store() *kv.Store { return store }

// SetBackend makes the table serve b from the next call on, and closes the
// backend it served before.
func SetBackend(b Backend) {
	if old := served.Swap(&b); old != nil && *old != b {
		(*old).Close()
	}
}

// configure applies one setting of the configure member: "backend" chooses
// what the table serves ("memory", "shm", "shm://NAME", or a Redis URL);
// the others set the in-process store, and the shared-memory segment too
// while one is served. A shared-memory segment is opened with the
// in-process store's settings (the configure member sends them first): it
// is created with that memory limit, or must have been.
func configure(name, value string) error {
	invalid := func() error { return fmt.Errorf("%w: %s=%q", kv.ErrInvalidArgument, name, value) }
	switch name {
	case "backend":
	case "near_cache_prefixes":
		near.Prefixes = nil
		for _, p := range strings.Split(value, ",") {
			if p = strings.TrimSpace(p); p != "" {
				near.Prefixes = append(near.Prefixes, p)
			}
		}
		return nil
	case "near_cache_staleness_ms", "near_cache_size":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 {
			return invalid()
		}
		if name == "near_cache_size" {
			near.MaxBytes = n
		} else {
			near.Staleness = time.Duration(n) * time.Millisecond
		}
		return nil
	default:
		if err := (backend.Memory{Store: store}).Configure(name, value); err != nil {
			return err
		}
		if s, ok := current().(*shm.Store); ok {
			return s.SetMemoryConfig(store.MemoryConfig())
		}
		return nil
	}
	if value == "memory" {
		SetBackend(backend.Memory{Store: store})
		return nil
	}
	if seg, ok := shmName(value); ok {
		s, err := shm.Open(seg, shm.Options{Memory: store.MemoryConfig(), PinnedPrefixes: shmPinned})
		if err != nil {
			if errors.Is(err, kv.ErrInvalidArgument) {
				return err
			}
			return fmt.Errorf("%w: %v", kv.ErrInvalidArgument, err)
		}
		SetBackend(s)
		return nil
	}
	r, err := redisstore.Open(value, near)
	if err != nil {
		return fmt.Errorf("%w: %v", kv.ErrInvalidArgument, err)
	}
	SetBackend(r)
	return nil
}

func current() Backend { return *served.Load() }

// shmName returns the segment a backend setting names: "shm" is the
// segment "default", "shm://NAME" the segment NAME.
func shmName(value string) (string, bool) {
	if value == "shm" {
		return "default", true
	}
	return strings.CutPrefix(value, "shm://")
}
