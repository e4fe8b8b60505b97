// The contract of locks held as entries: guarded writes and releases,
// SetNX with a read, and waits that a release wakes.

package backendtest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/barrier"
	"github.com/ephpm/ephpm/lockwait"
	"github.com/ephpm/ephpm/sessionkeys"
)

// lockContract: guarded writes, lock releases and the waits they wake.
var lockContract = []struct {
	name string
	run  func(t *testing.T, b backend.Backend, p string, clock Clock)
}{
	{"SetGuarded", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		ok, err := backend.SetGuarded(b, data, []byte("v1"), time.Minute, lock, []byte("tok"))
		require.NoError(t, err)
		assert.False(t, ok, "no lock")
		_, err = b.SetNX(lock, []byte("tok"), time.Minute)
		require.NoError(t, err)
		ok, _ = backend.SetGuarded(b, data, []byte("v1"), time.Minute, lock, []byte("bad"))
		assert.False(t, ok)
		ok, _ = backend.SetGuarded(b, data, []byte("v1"), time.Minute, lock, []byte("tok"))
		assert.True(t, ok)
		dst := make([]byte, 8)
		n, _, _ := b.GetInto(data, dst)
		assert.Equal(t, "v1", string(dst[:n]))
	}},
	{"DelGuarded", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		require.NoError(t, b.Set(data, []byte("v1"), time.Minute))
		held, err := backend.DelGuarded(b, data, lock, []byte("tok"))
		require.NoError(t, err)
		assert.False(t, held, "no lock")
		_, err = b.SetNX(lock, []byte("tok"), time.Minute)
		require.NoError(t, err)
		held, _ = backend.DelGuarded(b, data, lock, []byte("bad"))
		assert.False(t, held, "another holder's lock")
		found, _ := b.Exists(data)
		assert.True(t, found, "a refused delete changes nothing")
		held, _ = backend.DelGuarded(b, data, lock, []byte("tok"))
		assert.True(t, held)
		found, _ = b.Exists(data)
		assert.False(t, found, "deleted")
		held, _ = backend.DelGuarded(b, data, lock, []byte("tok"))
		assert.True(t, held, "nothing to delete: the guard still held")
		found, _ = b.Exists(lock)
		assert.True(t, found, "the lock is left to its holder")
	}},
	{"SetNXGet", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		dst := make([]byte, 8)
		out, n, found, err := backend.SetNXGet(b, lock, []byte("tok"), time.Minute, data, dst)
		require.NoError(t, err)
		assert.Equal(t, contract.Inserted, out)
		assert.False(t, found, "no data yet")
		assert.Equal(t, 0, n)
		boundTTL(t, b, lock, time.Minute)

		require.NoError(t, b.Set(data, []byte("v1"), time.Minute))
		out, _, found, err = backend.SetNXGet(b, lock, []byte("other"), time.Minute, data, dst)
		require.NoError(t, err)
		assert.Equal(t, contract.Exists, out, "held")
		assert.False(t, found, "nothing read without the lock")
		ok, _ := b.DelIfEq(lock, []byte("tok"))
		require.True(t, ok)

		out, n, found, err = backend.SetNXGet(b, lock, []byte("tok2"), 0, data, dst)
		require.NoError(t, err)
		assert.Equal(t, contract.Inserted, out)
		assert.True(t, found)
		assert.Equal(t, "v1", string(dst[:n]))
		boundTTL(t, b, lock, 0)
		b.DelIfEq(lock, []byte("tok2"))

		small := []byte("xy")
		out, n, found, err = backend.SetNXGet(b, lock, []byte("tok3"), time.Minute, data, small)
		require.NoError(t, err)
		assert.Equal(t, contract.Inserted, out)
		assert.True(t, found)
		assert.Equal(t, 2, n, "fits exactly")
		require.NoError(t, b.Set(data, []byte("longer"), time.Minute))
		b.DelIfEq(lock, []byte("tok3"))
		copy(small, "xy")
		out, n, found, _ = backend.SetNXGet(b, lock, []byte("tok4"), time.Minute, data, small)
		assert.Equal(t, contract.Inserted, out)
		assert.True(t, found)
		assert.Equal(t, 6, n, "too small: the length comes back")
		assert.Equal(t, "xy", string(small), "and nothing is copied")
		require.NoError(t, b.Set(data, []byte{}, time.Minute))
		b.DelIfEq(lock, []byte("tok4"))
		out, n, found, _ = backend.SetNXGet(b, lock, []byte("tok5"), time.Minute, data, dst)
		assert.Equal(t, contract.Inserted, out)
		assert.True(t, found, "an empty value is a value")
		assert.Equal(t, 0, n)
	}},
	{"SetNXGetRaceHasOneWinner", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// Odd rounds through SetNXGetFenced, whose winner has a fence too.
		for round := 0; round < 20; round++ {
			sid := fmt.Sprintf("%ssid%d", p, round)
			data, lock := sessionkeys.DataKey(sid), sessionkeys.LockKey(sid)
			require.NoError(t, b.Set(data, []byte("v"), time.Minute))
			wins := barrier.Race(16, func(i int) bool {
				dst := make([]byte, 4)
				var out contract.SetNXOutcome
				var n int
				var found bool
				var err error
				fence := int64(1)
				if round%2 == 1 {
					out, n, found, fence, err = backend.SetNXGetFenced(b, lock, []byte(fmt.Sprint(i)), time.Minute, data, dst)
				} else {
					out, n, found, err = backend.SetNXGet(b, lock, []byte(fmt.Sprint(i)), time.Minute, data, dst)
				}
				if err != nil {
					t.Error(err)
					return false
				}
				if out == contract.Inserted && (!found || string(dst[:n]) != "v" || fence <= 0) {
					t.Errorf("the winner read %q (found %v), fence %d", dst[:n], found, fence)
				}
				return out == contract.Inserted
			})
			require.Equal(t, 1, wins, "round %d", round)
		}
	}},
	{"SetGuardedRelease", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		require.NoError(t, b.Set(data, []byte("v0"), time.Minute))
		ok, err := backend.SetGuardedRelease(b, data, []byte("v1"), time.Minute, lock, []byte("tok"))
		require.NoError(t, err)
		assert.False(t, ok, "no lock")
		_, err = b.SetNX(lock, []byte("tok"), time.Minute)
		require.NoError(t, err)
		ok, _ = backend.SetGuardedRelease(b, data, []byte("v1"), time.Minute, lock, []byte("bad"))
		assert.False(t, ok, "another holder's lock")
		dst := make([]byte, 8)
		n, _, _ := b.GetInto(data, dst)
		assert.Equal(t, "v0", string(dst[:n]), "a refused write changes nothing")
		held, _ := b.Exists(lock)
		assert.True(t, held, "nor releases")

		ok, err = backend.SetGuardedRelease(b, data, []byte("v1"), 30*time.Second, lock, []byte("tok"))
		require.NoError(t, err)
		assert.True(t, ok)
		n, _, _ = b.GetInto(data, dst)
		assert.Equal(t, "v1", string(dst[:n]))
		ttl, _, _ := b.PTTL(data)
		assert.Greater(t, ttl, 20*time.Second)
		assert.LessOrEqual(t, ttl, 30*time.Second, "the write's TTL")
		held, _ = b.Exists(lock)
		assert.False(t, held, "released")
		ok, _ = backend.SetGuardedRelease(b, data, []byte("v2"), time.Minute, lock, []byte("tok"))
		assert.False(t, ok, "released once: the guard is gone")
	}},
	{"ExpireGuardedRelease", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		require.NoError(t, b.Set(data, []byte("v0"), time.Minute))
		ok, err := backend.ExpireGuardedRelease(b, data, 2*time.Minute, lock, []byte("tok"))
		require.NoError(t, err)
		assert.False(t, ok, "no lock")
		_, err = b.SetNX(lock, []byte("tok"), time.Minute)
		require.NoError(t, err)
		ok, _ = backend.ExpireGuardedRelease(b, data, 2*time.Minute, lock, []byte("bad"))
		assert.False(t, ok, "another holder's lock")
		ok, _ = backend.ExpireGuardedRelease(b, data, 2*time.Minute, lock, []byte("to"))
		assert.False(t, ok, "a token's prefix is another token")
		ttl, _, _ := b.PTTL(data)
		assert.LessOrEqual(t, ttl, time.Minute, "a refused refresh changes nothing")
		held, _ := b.Exists(lock)
		assert.True(t, held, "nor releases")
		empty, emptyLock := sessionkeys.DataKey(p+"none"), sessionkeys.LockKey(p+"none")
		_, err = b.SetNX(emptyLock, []byte("tok"), time.Minute)
		require.NoError(t, err)
		ok, err = backend.ExpireGuardedRelease(b, empty, 2*time.Minute, emptyLock, []byte("tok"))
		require.NoError(t, err)
		assert.False(t, ok, "no data to refresh")
		held, _ = b.Exists(emptyLock)
		assert.True(t, held, "and the lock is kept")

		ok, err = backend.ExpireGuardedRelease(b, data, 2*time.Minute, lock, []byte("tok"))
		require.NoError(t, err)
		assert.True(t, ok)
		dst := make([]byte, 8)
		n, _, _ := b.GetInto(data, dst)
		assert.Equal(t, "v0", string(dst[:n]), "the value is kept")
		ttl, _, _ = b.PTTL(data)
		assert.Greater(t, ttl, time.Minute, "the new TTL")
		held, _ = b.Exists(lock)
		assert.False(t, held, "released")
		ok, _ = backend.ExpireGuardedRelease(b, data, time.Minute, lock, []byte("tok"))
		assert.False(t, ok, "released once: the guard is gone")
	}},
	{"SetGuardedReleaseWakesAWaiter", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		_, err := b.SetNX(lock, []byte("tok"), time.Hour) // past wokenByRelease's bound: only the release frees it
		require.NoError(t, err)
		wokenByRelease(t, b, lock, func() (bool, error) {
			return backend.SetGuardedRelease(b, data, []byte("v"), time.Minute, lock, []byte("tok"))
		})
	}},
	{"DelGuardedRefusesAnExpiredGuard", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		require.NoError(t, b.Set(data, []byte("v1"), time.Minute))
		_, err := b.SetNX(lock, []byte("tok"), 20*time.Millisecond)
		require.NoError(t, err)
		require.Eventually(t, func() bool { ok, _ := b.Exists(lock); return !ok }, hangCatch, 5*time.Millisecond)
		held, err := backend.DelGuarded(b, data, lock, []byte("tok"))
		require.NoError(t, err)
		assert.False(t, held, "an expired lock never matches")
		found, _ := b.Exists(data)
		assert.True(t, found)
	}},
	{"WaitWakesOnRelease", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		free, err := b.Wait(p+"free", time.Second)
		require.NoError(t, err)
		assert.True(t, free)
		// Held for an hour, waited for 10 minutes: only the release ends the
		// wait within hangCatch (a hang catch, not a speed bound).
		_, err = b.SetNX(p+"w", []byte("tok"), time.Hour)
		require.NoError(t, err)
		free, _ = b.Wait(p+"w", 30*time.Millisecond)
		assert.False(t, free, "still held after the timeout")
		done := make(chan time.Duration)
		go func() {
			start := time.Now()
			free, err := b.Wait(p+"w", 5*hangCatch)
			assert.NoError(t, err)
			assert.True(t, free)
			done <- time.Since(start)
		}()
		time.Sleep(100 * time.Millisecond) // let it subscribe and block
		ok, _ := b.DelIfEq(p+"w", []byte("tok"))
		require.True(t, ok)
		assert.Less(t, <-done, hangCatch, "woken by the release, not the timeout")
	}},
	{"SetNXRaceOneWinner", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		for r := 0; r < 20; r++ {
			key := fmt.Sprintf("%srace:%d", p, r)
			wins := barrier.Race(32, func(i int) bool {
				out, err := b.SetNX(key, []byte(fmt.Sprint(i)), time.Minute)
				assert.NoError(t, err)
				return out == contract.Inserted
			})
			require.Equal(t, 1, wins, "round %d", r)
		}
	}},
	{"LockerThroughBackend", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// 20 requests on one session through the real acquisition loop.
		l := &lockwait.Locker{Store: b}
		data, lock := sessionkeys.DataKey(p+"s"), sessionkeys.LockKey(p+"s")
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tok, _ := sessionkeys.NewToken()
				res, err := l.Acquire(lock, []byte(tok), time.Minute, time.Minute)
				if !assert.NoError(t, err) || !assert.True(t, res.Acquired) {
					return
				}
				dst := make([]byte, 64)
				n, _, _ := b.GetInto(data, dst)
				ok, err := backend.SetGuarded(b, data, append(dst[:n:n], 'x'), time.Minute, lock, []byte(tok))
				assert.NoError(t, err)
				assert.True(t, ok)
				ok, _ = b.DelIfEq(lock, []byte(tok))
				assert.True(t, ok)
			}()
		}
		wg.Wait()
		dst := make([]byte, 64)
		n, _, _ := b.GetInto(data, dst)
		assert.Equal(t, 20, n)
	}},
}

// wokenByRelease checks that release, which must release lock (held past
// hangCatch), wakes a caller waiting for lock, well before its wait would
// end (hangCatch tells the two apart: a hang catch, not a speed bound).
func wokenByRelease(t *testing.T, b backend.Backend, lock string, release func() (bool, error)) {
	t.Helper()
	done := make(chan time.Duration)
	go func() {
		start := time.Now()
		free, err := b.Wait(lock, 5*hangCatch)
		assert.NoError(t, err)
		assert.True(t, free)
		done <- time.Since(start)
	}()
	time.Sleep(100 * time.Millisecond) // let it subscribe and block
	ok, err := release()
	require.NoError(t, err)
	require.True(t, ok)
	assert.Less(t, <-done, hangCatch, "woken by the release, not the timeout")
}

// A BoundLeaser binds a lock granted with Step.Bound to its process by a
// lease (redisstore): the lock's PTTL is at most BoundLease while its
// holder renews it, until its TTL ends. 0: no lease.
type BoundLeaser interface {
	BoundLease() time.Duration
}

// boundTTL asserts that lock, just granted with Step.Bound and ttl (0:
// none), is held with its TTL, or, where b binds it by a lease, with the
// lease (the holder's renewals keep it for its TTL).
func boundTTL(t *testing.T, b backend.Backend, lock string, ttl time.Duration) {
	t.Helper()
	left, held, err := b.PTTL(lock)
	require.NoError(t, err)
	require.True(t, held)
	if l, ok := b.(BoundLeaser); ok && l.BoundLease() > 0 && (ttl == 0 || ttl > l.BoundLease()) {
		assert.Positive(t, left, "the lock has its lease")
		assert.LessOrEqual(t, left, l.BoundLease(), "the lock has its lease")
		return
	}
	if ttl == 0 {
		assert.Equal(t, time.Duration(-1), left, "0: no TTL")
		return
	}
	assert.Greater(t, left, ttl-10*time.Second, "the lock has its TTL")
}
