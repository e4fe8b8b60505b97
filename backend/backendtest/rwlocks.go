// The contract of read-write locks: LockAttempt, LockRelease, LockRefresh
// and LockInfo, shared and exclusive holds, and fairness to writers.

package backendtest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/barrier"
	"github.com/ephpm/ephpm/lockwait"
)

// rwlockContract: read-write locks.
var rwlockContract = []struct {
	name string
	run  func(t *testing.T, b backend.Backend, p string, clock Clock)
}{
	{"ReadLocksShareAndAWriterWaitsForThem", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// One hash tag: in a Cluster the lock and the fenced write share a slot.
		lock := "{" + p + "rw}"
		release, _ := lockCalls(t, b, lock)
		mode, holders, err := b.LockInfo(lock)
		require.NoError(t, err)
		assert.Equal(t, contract.LockExclusive, mode)
		assert.Zero(t, holders, "free")
		out, f1, err := b.LockAttempt(lock, []byte("r1"), contract.LockShared, time.Minute, 0)
		require.NoError(t, err)
		require.Equal(t, contract.Inserted, out)
		assert.Positive(t, f1)
		out, f2, err := b.LockAttempt(lock, []byte("r2"), contract.LockShared, time.Minute, 0)
		require.NoError(t, err)
		require.Equal(t, contract.Inserted, out, "readers share")
		assert.Greater(t, f2, f1, "every grant mints")
		mode, holders, _ = b.LockInfo(lock)
		assert.Equal(t, contract.LockShared, mode)
		assert.Equal(t, 2, holders)
		out, f, err := b.LockAttempt(lock, []byte("w"), contract.LockExclusive, time.Minute, 0)
		require.NoError(t, err)
		assert.Equal(t, contract.Exists, out, "a writer is refused while readers hold")
		assert.Zero(t, f, "no grant, no fence")
		out, _, _ = b.LockAttempt(lock, []byte("r3"), contract.LockShared, time.Minute, 0)
		assert.Equal(t, contract.Inserted, out, "without a claim readers still enter")
		require.True(t, release("r3"))
		out, _, err = b.LockAttempt(lock, []byte("w"), contract.LockExclusive, time.Minute, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, contract.Exists, out)
		out, _, err = b.LockAttempt(lock, []byte("r4"), contract.LockShared, time.Minute, 0)
		require.NoError(t, err)
		assert.Equal(t, contract.Exists, out, "the waiting writer's claim refuses new readers")
		ok, err := b.LockRelease(lock, []byte("nobody"))
		require.NoError(t, err)
		assert.False(t, ok, "a token that holds nothing releases nothing")
		assert.True(t, release("r1"))
		assert.False(t, release("r1"), "released once")
		_, holders, _ = b.LockInfo(lock)
		assert.Equal(t, 1, holders)
		out, _, _ = b.LockAttempt(lock, []byte("w"), contract.LockExclusive, time.Minute, time.Minute)
		assert.Equal(t, contract.Exists, out, "one reader left")
		assert.True(t, release("r2"))
		mode, holders, _ = b.LockInfo(lock)
		assert.Equal(t, contract.LockExclusive, mode)
		assert.Zero(t, holders, "a claim alone holds nothing")
		out, f3, err := b.LockAttempt(lock, []byte("w"), contract.LockExclusive, time.Minute, time.Minute)
		require.NoError(t, err)
		require.Equal(t, contract.Inserted, out, "the last reader's release lets the writer in")
		assert.Greater(t, f3, f2)
		dst := make([]byte, 8)
		n, _, _ := b.GetInto(lock, dst)
		assert.Equal(t, "w", string(dst[:n]), "held exclusively: the token, as set_nx leaves it")
		mode, holders, _ = b.LockInfo(lock)
		assert.Equal(t, contract.LockExclusive, mode)
		assert.Equal(t, 1, holders)
		out, _, _ = b.LockAttempt(lock, []byte("r5"), contract.LockShared, time.Minute, 0)
		assert.Equal(t, contract.Exists, out, "no reader while a writer holds")
		out, _, _ = b.LockAttempt(lock, []byte("w2"), contract.LockExclusive, time.Minute, time.Minute)
		assert.Equal(t, contract.Exists, out, "one writer")
		out, _ = b.SetNX(lock, []byte("x"), time.Minute)
		assert.Equal(t, contract.Exists, out)
		assert.True(t, release("w"))
		_, holders, _ = b.LockInfo(lock)
		assert.Zero(t, holders)
		got, _ := b.Fence(lock)
		assert.Equal(t, f3, got, "Fence reads lock_acquire's grants")
		out, f4, err := backend.SetNXFenced(b, lock, []byte("s"), time.Minute)
		require.NoError(t, err)
		require.Equal(t, contract.Inserted, out)
		assert.Greater(t, f4, f3, "one sequence with SetNXFenced")
		out, _, _ = b.LockAttempt(lock, []byte("r6"), contract.LockShared, time.Minute, 0)
		assert.Equal(t, contract.Exists, out, "set_nx's lock is an exclusive hold")
		assert.True(t, release("s"), "lock_release frees set_nx's lock")
		out, f5, _ := b.LockAttempt(lock, []byte("r6"), contract.LockShared, time.Minute, 0)
		require.Equal(t, contract.Inserted, out)
		assert.Greater(t, f5, f4)
		ok, err = backend.SetFenced(b, lock+":data", []byte("v"), 0, lock, f5)
		require.NoError(t, err)
		assert.True(t, ok, "a read grant is the latest grant")
		out, _ = b.SetNX(lock, []byte("x"), time.Minute)
		assert.Equal(t, contract.Exists, out, "set_nx sees a read-held name held")
		ok, _ = b.DelIfEq(lock, []byte("r6"))
		assert.False(t, ok, "del_if_eq sees a read-held name unequal")
		removed, err := b.Del(lock)
		require.NoError(t, err)
		assert.True(t, removed, "del removes every holder")
		_, holders, _ = b.LockInfo(lock)
		assert.Zero(t, holders)
	}},
	{"LockHoldsLapseAndRefresh", func(t *testing.T, b backend.Backend, p string, clock Clock) {
		lock := p + "rw"
		release, refresh := lockCalls(t, b, lock)
		out, _, err := b.LockAttempt(lock, []byte("short"), contract.LockShared, 100*time.Millisecond, 0)
		require.NoError(t, err)
		require.Equal(t, contract.Inserted, out)
		out, _, _ = b.LockAttempt(lock, []byte("long"), contract.LockShared, time.Minute, 0)
		require.Equal(t, contract.Inserted, out)
		ok, err := b.LockRefresh(lock, []byte("nobody"), time.Minute)
		require.NoError(t, err)
		assert.False(t, ok, "refresh by a token that holds nothing")
		require.Eventually(t, func() bool { _, n, _ := b.LockInfo(lock); return n == 1 }, hangCatch, 5*time.Millisecond,
			"a lapsed hold counts as absent")
		assert.False(t, refresh("short", time.Minute), "a lapsed hold is not refreshed")
		assert.False(t, release("short"))
		assert.True(t, refresh("long", 100*time.Millisecond))
		require.Eventually(t, func() bool { _, n, _ := b.LockInfo(lock); return n == 0 }, hangCatch, 5*time.Millisecond,
			"refreshed to lapse soon")
		// 30 s, refreshed to a minute: no host's pace lets it lapse first.
		out, _, _ = b.LockAttempt(lock, []byte("ex"), contract.LockExclusive, 30*time.Second, 0)
		require.Equal(t, contract.Inserted, out, "every hold lapsed: free")
		assert.True(t, refresh("ex", time.Minute), "an exclusive hold refreshes")
		ttl, found, _ := b.PTTL(lock)
		require.True(t, found)
		assert.Greater(t, ttl, 50*time.Second)
		ok, _ = b.ExpireIfEq(lock, []byte("ex"), time.Minute)
		assert.True(t, ok, "expire_if_eq works on an exclusive hold")
		assert.True(t, release("ex"))

		// A claim lapses too: readers enter again once the writer stops.
		// The claim refuses readers while it lives: asserted unless the host
		// took longer than the claim to get to the next attempt.
		out, _, _ = b.LockAttempt(lock, []byte("r"), contract.LockShared, time.Minute, 0)
		require.Equal(t, contract.Inserted, out)
		const claim = 100 * time.Millisecond
		claimed := clock.Now()
		out, _, _ = b.LockAttempt(lock, []byte("w"), contract.LockExclusive, time.Minute, claim)
		require.Equal(t, contract.Exists, out)
		out, _, _ = b.LockAttempt(lock, []byte("r2"), contract.LockShared, time.Minute, 0)
		if time.Duration(clock.Now()-claimed) < claim-2*clock.Resolution {
			assert.Equal(t, contract.Exists, out, "claimed")
		} else if out == contract.Inserted {
			require.True(t, release("r2"))
		}
		require.Eventually(t, func() bool {
			out, _, _ := b.LockAttempt(lock, []byte("r2"), contract.LockShared, time.Minute, 0)
			return out == contract.Inserted
		}, hangCatch, 5*time.Millisecond, "a lapsed claim refuses nobody")
		_, n, _ := b.LockInfo(lock)
		assert.Equal(t, 2, n)
	}},
	{"LockAttemptRefusesBadArguments", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		lock := p + "rw"
		for _, tok := range [][]byte{{}, make([]byte, 256)} {
			_, _, err := b.LockAttempt(lock, tok, contract.LockShared, time.Minute, 0)
			assert.ErrorIs(t, err, contract.ErrInvalidArgument, "a token of %d bytes", len(tok))
		}
		_, _, err := b.LockAttempt(lock, []byte("t"), contract.LockMode(2), time.Minute, 0)
		assert.ErrorIs(t, err, contract.ErrInvalidArgument, "mode 2")
		_, _, err = b.LockAttempt(lock, []byte("t"), contract.LockShared, -time.Second, 0)
		assert.ErrorIs(t, err, contract.ErrInvalidArgument, "a negative TTL")
		out, _, err := b.LockAttempt(lock, []byte("t"), contract.LockShared, time.Minute, 0)
		require.NoError(t, err)
		require.Equal(t, contract.Inserted, out)
		_, _, err = b.LockAttempt(lock, []byte("t"), contract.LockShared, time.Minute, 0)
		assert.ErrorIs(t, err, contract.ErrInvalidArgument, "a token that already reads")
		_, n, _ := b.LockInfo(lock)
		assert.Equal(t, 1, n, "a refused call changes nothing")
		f, _ := b.Fence(lock)
		_, _, err = b.LockAttempt(lock, make([]byte, 300), contract.LockExclusive, time.Minute, 0)
		assert.ErrorIs(t, err, contract.ErrInvalidArgument)
		got, _ := b.Fence(lock)
		assert.Equal(t, f, got, "a refused call mints nothing")
	}},
	{"ReadersAndWritersNeverOverlap", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// 16 callers at a barrier, 4 of them writers, each takes the lock
		// 15 times through the wait loop. A writer must hold it alone; a
		// reader only beside readers. Every grant's fence exceeds that of
		// every grant that came before it: a writer's every earlier
		// fence, a reader's the fence of the writer before it.
		lock := p + "rw"
		l := &lockwait.Locker{Store: b}
		var readers, writers atomic.Int32
		var mu sync.Mutex
		maxFence, lastWriter := int64(0), int64(0)
		seen := map[int64]bool{}
		barrier.Race(16, func(i int) bool {
			mode := contract.LockShared
			if i%4 == 0 {
				mode = contract.LockExclusive
			}
			for r := 0; r < 15; r++ {
				tok := []byte(fmt.Sprintf("%d:%d", i, r))
				res, f, err := l.AcquireLock(b, lock, tok, mode, time.Minute, time.Minute)
				if !assert.NoError(t, err) || !assert.True(t, res.Acquired) {
					return false
				}
				if mode == contract.LockExclusive {
					assert.Equal(t, int32(1), writers.Add(1), "one writer at a time")
					assert.Zero(t, readers.Load(), "no reader beside a writer")
				} else {
					readers.Add(1)
					assert.Zero(t, writers.Load(), "no writer beside a reader")
				}
				mu.Lock()
				assert.False(t, seen[f], "fence %d granted twice", f)
				seen[f] = true
				if mode == contract.LockExclusive {
					assert.Greater(t, f, maxFence, "a writer's fence exceeds every earlier grant's")
					lastWriter = f
				} else {
					assert.Greater(t, f, lastWriter, "a reader's fence exceeds the writer's before it")
				}
				maxFence = max(maxFence, f)
				mu.Unlock()
				time.Sleep(time.Millisecond) // hold it a little: readers overlap
				if mode == contract.LockExclusive {
					writers.Add(-1)
				} else {
					readers.Add(-1)
				}
				ok, err := b.LockRelease(lock, tok)
				assert.NoError(t, err)
				assert.True(t, ok)
			}
			return true
		})
		assert.Len(t, seen, 16*15)
		_, n, _ := b.LockInfo(lock)
		assert.Zero(t, n, "every hold released")
	}},
	{"AWaitingWriterIsNotStarvedByReaders", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// Readers keep the name read-held without a gap (each re-enters
		// while the others hold); a writer waiting for them gets it.
		lock := p + "rw"
		l := &lockwait.Locker{Store: b}
		var stop atomic.Bool
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			out, _, err := b.LockAttempt(lock, []byte(fmt.Sprint("first:", i)), contract.LockShared, time.Minute, 0)
			require.NoError(t, err)
			require.Equal(t, contract.Inserted, out)
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				prev := []byte(fmt.Sprint("first:", i))
				for r := 0; !stop.Load(); r++ {
					time.Sleep(5 * time.Millisecond)
					b.LockRelease(lock, prev)
					prev = []byte(fmt.Sprint(i, ":", r))
					res, _, err := l.AcquireLock(b, lock, prev, contract.LockShared, time.Minute, 5*hangCatch)
					if !assert.NoError(t, err) || !res.Acquired {
						return
					}
				}
				b.LockRelease(lock, prev)
			}(i)
		}
		time.Sleep(20 * time.Millisecond) // the readers' loop runs
		// The readers read on until stopped: a starved writer would wait out
		// its budget (a hang catch, not a speed bound).
		res, _, err := l.AcquireLock(b, lock, []byte("writer"), contract.LockExclusive, time.Minute, hangCatch)
		stop.Store(true)
		require.NoError(t, err)
		assert.True(t, res.Acquired, "the writer got the lock within its wait")
		if res.Acquired {
			mode, n, _ := b.LockInfo(lock)
			assert.Equal(t, contract.LockExclusive, mode)
			assert.Equal(t, 1, n)
			b.LockRelease(lock, []byte("writer"))
		}
		wg.Wait()
	}},
}

// lockCalls are LockRelease and LockRefresh of lock, failing t on an
// error, for tests that assert what they report.
func lockCalls(t *testing.T, b backend.Backend, lock string) (release func(tok string) bool, refresh func(tok string, ttl time.Duration) bool) {
	release = func(tok string) bool {
		ok, err := b.LockRelease(lock, []byte(tok))
		require.NoError(t, err)
		return ok
	}
	refresh = func(tok string, ttl time.Duration) bool {
		ok, err := b.LockRefresh(lock, []byte(tok), ttl)
		require.NoError(t, err)
		return ok
	}
	return release, refresh
}
