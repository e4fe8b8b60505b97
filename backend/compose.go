package backend

import (
	"bytes"
	"errors"
	"strings"
	"time"

	"github.com/ephpm/ephpm/kv"
)

// A store without a one-step form of the session members composes them
// from the members it has. Composed, each keeps its contract: the read
// follows the grant, and the release the guarded write, under the lock the
// call holds, so no request that honours the lock comes between them.

// A composed call refused at a step after one that granted or wrote did
// something: its error must not say kv.ErrNothingDone ("nothing was
// written or granted"), which the extension reports as a known outcome.
// Each step's error passes through AfterDone once a step before it
// succeeded.

// AfterDone is err as the error of a call that changed something before
// it failed (a composed call's later step, a Flush's later shard): nil for
// nil; err itself unless it is kv.ErrNothingDone; else an error that is
// everything err is (errors.Is) but kv.ErrNothingDone, and whose message
// is err's without that error's text before it: the outcome is unknown.
func AfterDone(err error) error {
	if err == nil || !errors.Is(err, kv.ErrNothingDone) {
		return err
	}
	return afterDone{err}
}

// afterDone is AfterDone's error.
type afterDone struct{ err error }

func (e afterDone) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), kv.ErrNothingDone.Error()+": ")
	return strings.ReplaceAll(msg, kv.ErrNothingDone.Error(), "refused") + " (after an earlier step of the call was done)"
}

// Is reports what err is, but for kv.ErrNothingDone. (No Unwrap: it
// would lead errors.Is to err's kv.ErrNothingDone.)
func (e afterDone) Is(target error) bool {
	return target != kv.ErrNothingDone && errors.Is(e.err, target)
}

// As is errors.As of err, for a caller that looks for its cause's type.
func (e afterDone) As(target any) bool { return errors.As(e.err, target) }

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
	return out, n, found, AfterDone(err)
}

// FencedLockThenGet is SetNXGetFenced as SetNXFenced, then GetInto once
// inserted.
func FencedLockThenGet(s interface {
	SetNXFenced(key string, value []byte, ttl time.Duration) (kv.SetNXOutcome, int64, error)
	GetInto(key string, dst []byte) (int, bool, error)
}, key string, value []byte, ttl time.Duration, dataKey string, dst []byte) (kv.SetNXOutcome, int, bool, int64, error) {
	out, fence, err := s.SetNXFenced(key, value, ttl)
	if err != nil || out != kv.Inserted {
		return out, 0, false, 0, err
	}
	n, found, err := s.GetInto(dataKey, dst)
	return out, n, found, fence, AfterDone(err)
}

// releaser is what the composed releases need: DelIfEq.
type releaser interface {
	DelIfEq(key string, token []byte) (bool, error)
}

// TouchThenRelease is ExpireGuardedRelease as a look at the guard, then
// Expire of key while it holds, then DelIfEq of the guard once refreshed.
// A guard that lapses between the look and the refresh lets the refresh
// through, which changes no value. An error from the release is returned
// with true, as WriteThenRelease returns it.
func TouchThenRelease(s interface {
	GetInto(key string, dst []byte) (int, bool, error)
	Expire(key string, ttl time.Duration) (bool, error)
	releaser
}, key string, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	held := make([]byte, len(guardToken)+1)
	n, found, err := s.GetInto(guardKey, held)
	if err != nil || !found || n != len(guardToken) || !bytes.Equal(held[:n], guardToken) {
		return false, err
	}
	refreshed, err := s.Expire(key, ttl)
	return releaseAfter(s, refreshed, err, guardKey, guardToken)
}

// WriteThenRelease is SetGuardedRelease as SetGuarded, then DelIfEq of
// the guard once written. An error from the release is returned with
// written true: the write happened, the release is unknown.
func WriteThenRelease(s interface {
	SetGuarded(key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error)
	releaser
}, key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	written, err := s.SetGuarded(key, value, ttl, guardKey, guardToken)
	return releaseAfter(s, written, err, guardKey, guardToken)
}

// FencedWriteThenRelease is SetFencedRelease as SetFencedToken (the
// fenced write of token's holder: kv, shm), then DelIfEq of the lock once
// written, returned as WriteThenRelease returns.
func FencedWriteThenRelease(s interface {
	SetFencedToken(key string, value []byte, ttl time.Duration, lock string, fence int64, token []byte) (bool, error)
	releaser
}, key string, value []byte, ttl time.Duration, lock string, fence int64, token []byte) (bool, error) {
	written, err := s.SetFencedToken(key, value, ttl, lock, fence, token)
	return releaseAfter(s, written, err, lock, token)
}

// FencedDelThenRelease is DelFencedRelease as DelFencedToken, then DelIfEq
// of the lock once removed, returned as WriteThenRelease returns.
func FencedDelThenRelease(s interface {
	DelFencedToken(key, lock string, fence int64, token []byte) (bool, error)
	releaser
}, key, lock string, fence int64, token []byte) (bool, error) {
	removed, err := s.DelFencedToken(key, lock, fence, token)
	return releaseAfter(s, removed, err, lock, token)
}

// releaseAfter releases lock with token once done: a composed write (or
// removal) and its release. A release that fails is returned with done
// true: the write happened, the release is unknown (AfterDone).
func releaseAfter(s releaser, done bool, err error, lock string, token []byte) (bool, error) {
	if err != nil || !done {
		return done, err
	}
	_, err = s.DelIfEq(lock, token)
	return true, AfterDone(err)
}
