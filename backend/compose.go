package backend

import (
	"bytes"
	"time"

	"github.com/ephpm/ephpm/kv"
)

// A store without a one-step form of the session members composes them
// from the members it has. Composed, each keeps its contract: the read
// follows the grant, and the release the guarded write, under the lock the
// call holds, so no request that honours the lock comes between them.

// LockThenGet is SetNXGet as SetNX, then GetInto once inserted.
func LockThenGet(s interface {
	SetNX(key string, value []byte, ttl time.Duration) (kv.SetNXOutcome, error)
	GetInto(key string, dst []byte) (int, bool, error)
}, key string, value []byte, ttl time.Duration, dataKey string, dst []byte) (kv.SetNXOutcome, int, bool, error) {
	out, err := s.SetNX(key, value, ttl)
	if err != nil || out != kv.Inserted {
		return out, 0, false, err
	}
	n, found, err := s.GetInto(dataKey, dst)
	return out, n, found, err
}

// TouchThenRelease is ExpireGuardedRelease as a look at the guard, then
// Expire of key while it holds, then DelIfEq of the guard once refreshed.
// A guard that lapses between the look and the refresh lets the refresh
// through, which changes no value. An error from the release is returned
// with true, as WriteThenRelease returns it.
func TouchThenRelease(s interface {
	GetInto(key string, dst []byte) (int, bool, error)
	Expire(key string, ttl time.Duration) (bool, error)
	DelIfEq(key string, token []byte) (bool, error)
}, key string, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	held := make([]byte, len(guardToken)+1)
	n, found, err := s.GetInto(guardKey, held)
	if err != nil || !found || n != len(guardToken) || !bytes.Equal(held[:n], guardToken) {
		return false, err
	}
	refreshed, err := s.Expire(key, ttl)
	if err != nil || !refreshed {
		return false, err
	}
	_, err = s.DelIfEq(guardKey, guardToken)
	return true, err
}

// WriteThenRelease is SetGuardedRelease as SetGuarded, then DelIfEq of
// the guard once written. An error from the release is returned with
// written true: the write happened, the release is unknown.
func WriteThenRelease(s interface {
	SetGuarded(key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error)
	DelIfEq(key string, token []byte) (bool, error)
}, key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	written, err := s.SetGuarded(key, value, ttl, guardKey, guardToken)
	if err != nil || !written {
		return written, err
	}
	_, err = s.DelIfEq(guardKey, guardToken)
	return true, err
}
