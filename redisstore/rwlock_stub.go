package redisstore

import (
	"errors"
	"time"

	"github.com/ephpm/ephpm/kv"
)

// The read/write lock methods of backend.Backend, stubbed so that this
// branch builds; the integrator replaces this file with redisstore/rwlock.go.

var errRWLockStub = errors.New("redisstore: read/write locks are not implemented on this branch")

func (s *Store) LockAttempt(key string, token []byte, mode kv.LockMode, ttl, claim time.Duration) (kv.SetNXOutcome, int64, error) {
	return 0, 0, errRWLockStub
}

func (s *Store) LockRelease(key string, token []byte) (bool, error) { return false, errRWLockStub }

func (s *Store) LockRefresh(key string, token []byte, ttl time.Duration) (bool, error) {
	return false, errRWLockStub
}

func (s *Store) LockInfo(key string) (kv.LockMode, int, error) {
	return kv.LockExclusive, 0, errRWLockStub
}
