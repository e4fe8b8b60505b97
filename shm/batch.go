package shm

import (
	"time"

	"github.com/ephpm/ephpm/backend"
)

// GetMany reads each key on its own (each as GetInto reads one), as the
// in-process store does: a batch costs one crossing, not one lock.
func (s *Store) GetMany(keys []string, dst []byte) (int, error) {
	return backend.GetEach(s.GetInto, keys, dst)
}

// SetMany writes each entry on its own, in order, and stops at the first
// failure.
func (s *Store) SetMany(keys []string, values [][]byte, ttl time.Duration) (int, error) {
	return backend.SetEach(s.Set, keys, values, ttl)
}
