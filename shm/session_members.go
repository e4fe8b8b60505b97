package shm

import (
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/kv"
)

// SetNXGet takes the lock, then reads the data, each under its own shard
// lock (backend.LockThenGet): the read follows the grant under the session
// lock this call now holds.
func (s *Store) SetNXGet(key string, value []byte, ttl time.Duration, dataKey string, dst []byte) (kv.SetNXOutcome, int, bool, error) {
	return backend.LockThenGet(s, key, value, ttl, dataKey, dst)
}

// SetGuardedRelease writes while the guard holds, then releases the guard
// (backend.WriteThenRelease).
func (s *Store) SetGuardedRelease(key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	return backend.WriteThenRelease(s, key, value, ttl, guardKey, guardToken)
}

// ExpireGuardedRelease refreshes while the guard holds, then releases the
// guard (backend.TouchThenRelease).
func (s *Store) ExpireGuardedRelease(key string, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	return backend.TouchThenRelease(s, key, ttl, guardKey, guardToken)
}
