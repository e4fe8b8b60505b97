package backend_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/kv"
)

// errCause is a cause a store's refusal may name beside kv.ErrNothingDone
// (shm's ErrSegmentRemoved, redisstore's ErrEvictingServer).
var errCause = errors.New("cause")

// stepStore does each step of a composed call, and refuses every step
// from the failAt-th (1-based) on with an error that is kv.ErrNothingDone:
// that step did nothing, but the steps before it did.
type stepStore struct {
	failAt, step int
}

func (f *stepStore) next() error {
	f.step++
	if f.step >= f.failAt {
		return fmt.Errorf("%w: %w: step %d refused", kv.ErrNothingDone, errCause, f.step)
	}
	return nil
}

func (f *stepStore) SetNX(string, []byte, time.Duration) (kv.SetNXOutcome, error) {
	return kv.Inserted, f.next()
}
func (f *stepStore) SetNXFenced(string, []byte, time.Duration) (kv.SetNXOutcome, int64, error) {
	return kv.Inserted, 7, f.next()
}
func (f *stepStore) GetInto(_ string, dst []byte) (int, bool, error) {
	if err := f.next(); err != nil {
		return 0, false, err
	}
	return copy(dst, "tok"), true, nil
}
func (f *stepStore) Expire(string, time.Duration) (bool, error) { return true, f.next() }
func (f *stepStore) DelIfEq(string, []byte) (bool, error)       { return true, f.next() }
func (f *stepStore) SetGuarded(string, []byte, time.Duration, string, []byte) (bool, error) {
	return true, f.next()
}
func (f *stepStore) SetFencedToken(string, []byte, time.Duration, string, int64, []byte) (bool, error) {
	return true, f.next()
}
func (f *stepStore) DelFencedToken(string, string, int64, []byte) (bool, error) {
	return true, f.next()
}

// TestAComposedCallSaysNothingDoneOnlyBeforeItsFirstDoneStep: a composed
// call refused at its first step that changes anything keeps
// kv.ErrNothingDone; refused at a later step, after one that granted or
// wrote, it must not say nothing was done (the extension would report a
// known outcome: no lock held, no write made), but still names its cause.
func TestAComposedCallSaysNothingDoneOnlyBeforeItsFirstDoneStep(t *testing.T) {
	calls := []struct {
		name string
		// first is the step of the call's first change (TouchThenRelease
		// reads the guard first).
		first, steps int
		call         func(s *stepStore) error
	}{
		{"LockThenGet", 1, 2, func(s *stepStore) error {
			_, _, _, err := backend.LockThenGet(s, "lock", []byte("t"), time.Minute, "data", make([]byte, 8))
			return err
		}},
		{"FencedLockThenGet", 1, 2, func(s *stepStore) error {
			_, _, _, _, err := backend.FencedLockThenGet(s, "lock", []byte("t"), time.Minute, "data", make([]byte, 8))
			return err
		}},
		{"TouchThenRelease", 2, 3, func(s *stepStore) error {
			_, err := backend.TouchThenRelease(s, "data", time.Minute, "lock", []byte("tok"))
			return err
		}},
		{"WriteThenRelease", 1, 2, func(s *stepStore) error {
			_, err := backend.WriteThenRelease(s, "data", []byte("v"), time.Minute, "lock", []byte("tok"))
			return err
		}},
		{"FencedWriteThenRelease", 1, 2, func(s *stepStore) error {
			_, err := backend.FencedWriteThenRelease(s, "data", []byte("v"), time.Minute, "lock", 7, []byte("tok"))
			return err
		}},
		{"FencedDelThenRelease", 1, 2, func(s *stepStore) error {
			_, err := backend.FencedDelThenRelease(s, "data", "lock", 7, []byte("tok"))
			return err
		}},
	}
	for _, c := range calls {
		for failAt := 1; failAt <= c.steps; failAt++ {
			err := c.call(&stepStore{failAt: failAt})
			require.Error(t, err, "%s refused at step %d", c.name, failAt)
			require.ErrorIs(t, err, errCause, "%s refused at step %d", c.name, failAt)
			if failAt <= c.first {
				require.ErrorIs(t, err, kv.ErrNothingDone, "%s refused at step %d, before any change", c.name, failAt)
				continue
			}
			require.False(t, errors.Is(err, kv.ErrNothingDone), "%s refused at step %d, after a change: %v", c.name, failAt, err)
			require.False(t, strings.HasPrefix(err.Error(), kv.ErrNothingDone.Error()),
				"%s refused at step %d, after a change: %v", c.name, failAt, err)
			require.NotContains(t, err.Error(), kv.ErrNothingDone.Error(), "%s refused at step %d", c.name, failAt)
		}
	}
}
