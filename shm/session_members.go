package shm

import (
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/kv"
)

// sessionGrants is the store as the session members take a session's
// lock: each grant records this process as the lock's holder, so that the
// lock lapses once the process is dead (entry.go).
type sessionGrants struct{ *Store }

func (g sessionGrants) SetNX(key string, value []byte, ttl time.Duration) (kv.SetNXOutcome, error) {
	return g.setNX(key, value, ttl, true)
}

func (g sessionGrants) SetNXFenced(key string, value []byte, ttl time.Duration) (kv.SetNXOutcome, int64, error) {
	return g.setNXFenced(key, value, ttl, true)
}

// SetNXGet takes the lock, then reads the data, each under its own shard
// lock (backend.LockThenGet): the read follows the grant under the session
// lock this call now holds.
func (s *Store) SetNXGet(key string, value []byte, ttl time.Duration, dataKey string, dst []byte) (kv.SetNXOutcome, int, bool, error) {
	return backend.LockThenGet(sessionGrants{s}, key, value, ttl, dataKey, dst)
}

// SetGuardedRelease writes while the guard holds, then releases the guard
// (backend.WriteThenRelease).
func (s *Store) SetGuardedRelease(key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	return backend.WriteThenRelease(s, key, value, ttl, guardKey, guardToken)
}

// SetNXGetFenced takes the lock and mints its fence, then reads the data
// (backend.FencedLockThenGet).
func (s *Store) SetNXGetFenced(key string, value []byte, ttl time.Duration, dataKey string, dst []byte) (kv.SetNXOutcome, int, bool, int64, error) {
	return backend.FencedLockThenGet(sessionGrants{s}, key, value, ttl, dataKey, dst)
}

// SetFencedRelease writes while the fence holds and no other holder has
// the lock, then releases it (backend.FencedWriteThenRelease).
func (s *Store) SetFencedRelease(key string, value []byte, ttl time.Duration, lock string, fence int64, token []byte) (bool, error) {
	return backend.FencedWriteThenRelease(s, key, value, ttl, lock, fence, token)
}

// DelFencedRelease removes as SetFencedRelease writes
// (backend.FencedDelThenRelease).
func (s *Store) DelFencedRelease(key, lock string, fence int64, token []byte) (bool, error) {
	return backend.FencedDelThenRelease(s, key, lock, fence, token)
}

// ExpireGuardedRelease refreshes while the guard holds, then releases the
// guard (backend.TouchThenRelease).
func (s *Store) ExpireGuardedRelease(key string, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	return backend.TouchThenRelease(s, key, ttl, guardKey, guardToken)
}
