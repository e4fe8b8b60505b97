package memstore

import (
	"time"

	"github.com/ephpm/ephpm/contract"
)

// IncrBy adds delta to the decimal integer stored under key and returns the
// result, atomically. A missing key is created holding delta, with
// ttlOnCreate (0: none); an existing entry keeps its TTL. It fails with
// ErrNotInteger if the value is not an integer as parseInteger reads it,
// ErrOverflow if the sum leaves the int64 range, or ErrNoMemory; then
// nothing changed.
func (s *Store) IncrBy(key string, delta int64, ttlOnCreate time.Duration) (int64, error) {
	if err := contract.CheckKey(key); err != nil {
		return 0, err
	}
	if err := contract.CheckTTL(ttlOnCreate); err != nil {
		return 0, err
	}
	var r writeReq // filled in place: see prepare
	r.key, r.mode, r.delta, r.ttl = key, modeIncr, delta, ttlOnCreate
	if _, err := s.install(&r); err != nil {
		return 0, err
	}
	return r.sum, nil
}
