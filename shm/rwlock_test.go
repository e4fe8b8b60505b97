package shm

import (
	"fmt"
	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/internal/coarse"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

// attempt is one LockAttempt that must not fail; it returns whether it was
// granted and the fence.
func attempt(t *testing.T, s *Store, key, token string, mode contract.LockMode, ttl, claim time.Duration) (bool, int64) {
	t.Helper()
	out, f, err := s.LockAttempt(key, []byte(token), mode, ttl, claim)
	require.NoError(t, err)
	if out == contract.Inserted {
		require.Positive(t, f, "a grant's fence")
		return true, f
	}
	require.Equal(t, contract.Exists, out)
	require.Zero(t, f, "a refusal's fence")
	return false, 0
}

func info(t *testing.T, s *Store, key string) (contract.LockMode, int) {
	t.Helper()
	mode, n, err := s.LockInfo(key)
	require.NoError(t, err)
	return mode, n
}

func release(t *testing.T, s *Store, key, token string) bool {
	t.Helper()
	ok, err := s.LockRelease(key, []byte(token))
	require.NoError(t, err)
	return ok
}

func TestReadersShareAndAWriterGetsInAfterTheLast(t *testing.T) {
	for _, comp := range []bool{false, true} {
		t.Run(fmt.Sprint("compression=", comp), func(t *testing.T) {
			s := openTest(t, contract.MemoryConfig{Limit: 8 << 20, Compression: comp, CompressionMinSize: 16})
			ok, _ := attempt(t, s, "rw", "reader-one-token", contract.LockShared, time.Minute, 0)
			require.True(t, ok)
			ok, _ = attempt(t, s, "rw", "reader-two-token", contract.LockShared, time.Minute, 0)
			require.True(t, ok, "readers share")
			mode, n := info(t, s, "rw")
			assert.Equal(t, contract.LockShared, mode)
			assert.Equal(t, 2, n)

			ok, _ = attempt(t, s, "rw", "writer", contract.LockExclusive, time.Minute, 0)
			require.False(t, ok, "readers hold it")
			ok, _ = attempt(t, s, "rw", "reader-three", contract.LockShared, time.Minute, 0)
			require.True(t, ok, "no claim without claim time")
			require.True(t, release(t, s, "rw", "reader-three"))

			ok, _ = attempt(t, s, "rw", "writer", contract.LockExclusive, time.Minute, contract.WriterClaim)
			require.False(t, ok, "readers hold it")
			ok, _ = attempt(t, s, "rw", "reader-three", contract.LockShared, time.Minute, 0)
			require.False(t, ok, "the waiting writer's claim refuses new readers")

			require.True(t, release(t, s, "rw", "reader-one-token"))
			ok, _ = attempt(t, s, "rw", "writer", contract.LockExclusive, time.Minute, contract.WriterClaim)
			require.False(t, ok, "one reader left")
			require.True(t, release(t, s, "rw", "reader-two-token"))
			mode, n = info(t, s, "rw")
			assert.Equal(t, contract.LockExclusive, mode)
			assert.Zero(t, n, "a claim alone holds nothing")
			ok, _ = attempt(t, s, "rw", "reader-three", contract.LockShared, time.Minute, 0)
			require.False(t, ok, "the claim still stands until the writer enters")

			ok, _ = attempt(t, s, "rw", "writer", contract.LockExclusive, time.Minute, contract.WriterClaim)
			require.True(t, ok, "the writer enters after the last reader")
			mode, n = info(t, s, "rw")
			assert.Equal(t, contract.LockExclusive, mode)
			assert.Equal(t, 1, n)
			// Held exclusively, the name holds the token as set_nx leaves it.
			dst := make([]byte, 64)
			got, found, err := s.GetInto("rw", dst)
			require.NoError(t, err)
			require.True(t, found)
			assert.Equal(t, "writer", string(dst[:got]))
			ok, _ = attempt(t, s, "rw", "reader-three", contract.LockShared, time.Minute, 0)
			require.False(t, ok, "a writer holds it")
			ok, _ = attempt(t, s, "rw", "other-writer", contract.LockExclusive, time.Minute, contract.WriterClaim)
			require.False(t, ok, "a writer holds it")
			out, err := s.SetNX("rw", []byte("x"), 0)
			require.NoError(t, err)
			assert.Equal(t, contract.Exists, out)

			require.True(t, release(t, s, "rw", "writer"))
			mode, n = info(t, s, "rw")
			assert.Equal(t, contract.LockExclusive, mode)
			assert.Zero(t, n, "free")
			found, err = s.Exists("rw")
			require.NoError(t, err)
			assert.False(t, found, "the last release removes the entry")
		})
	}
}

func TestLockAttemptsCountAsSetNXWinsAndLosses(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 8 << 20})
	attempt(t, s, "rw", "a", contract.LockShared, time.Minute, 0)
	attempt(t, s, "rw", "b", contract.LockShared, time.Minute, 0)
	attempt(t, s, "rw", "w", contract.LockExclusive, time.Minute, contract.WriterClaim)
	release(t, s, "rw", "a")
	st, err := s.Stats()
	require.NoError(t, err)
	assert.Equal(t, uint64(2), st.SetNXWins)
	assert.Equal(t, uint64(1), st.SetNXLosses)
	assert.Zero(t, st.Sets, "a lock step is no set")
}

func TestLockCallsOnOtherEntries(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 8 << 20})
	// set_nx's lock and lock_acquire's exclusive hold are the same entry.
	_, err := s.SetNX("plain", []byte("tok"), time.Minute)
	require.NoError(t, err)
	mode, n := info(t, s, "plain")
	assert.Equal(t, contract.LockExclusive, mode)
	assert.Equal(t, 1, n)
	ok, _ := attempt(t, s, "plain", "reader", contract.LockShared, time.Minute, 0)
	assert.False(t, ok)
	assert.False(t, release(t, s, "plain", "other"), "wrong token: MISS")
	assert.True(t, release(t, s, "plain", "tok"))

	ok, _ = attempt(t, s, "x", "writer", contract.LockExclusive, time.Minute, 0)
	require.True(t, ok)
	eq, err := s.DelIfEq("x", []byte("writer"))
	require.NoError(t, err)
	assert.True(t, eq, "del_if_eq releases an exclusive hold")

	ok, _ = attempt(t, s, "r", "reader", contract.LockShared, time.Minute, 0)
	require.True(t, ok)
	assert.False(t, release(t, s, "r", "nobody"), "wrong token: MISS")
	ok, err = s.LockRefresh("r", []byte("nobody"), time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "wrong token: MISS")
	assert.False(t, release(t, s, "free", "reader"), "a free name: MISS")
	assert.False(t, release(t, s, "r", ""), "an empty token holds nothing: MISS")
	ok, err = s.LockRefresh("free", []byte("reader"), time.Minute)
	require.NoError(t, err)
	assert.False(t, ok)
	// del is the force-release: every holder goes.
	found, err := s.Del("r")
	require.NoError(t, err)
	assert.True(t, found)
	_, n = info(t, s, "r")
	assert.Zero(t, n)
}

func TestLapsedHoldsAndClaimsCountAsAbsent(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 8 << 20})
	ok, _ := attempt(t, s, "rw", "short", contract.LockShared, 5*time.Millisecond, 0)
	require.True(t, ok)
	ok, _ = attempt(t, s, "rw", "long", contract.LockShared, time.Minute, 0)
	require.True(t, ok)
	sleepOnStoreClock(5 * time.Millisecond) // the short hold lapses
	_, n := info(t, s, "rw")
	assert.Equal(t, 1, n, "a lapsed hold is no holder")
	assert.False(t, release(t, s, "rw", "short"), "a lapsed hold is not released")
	ok, _ = attempt(t, s, "rw", "short", contract.LockShared, time.Minute, 0)
	assert.True(t, ok, "its token may read again")

	// A claim lapses too: readers are let in again. The next call finds it
	// unless the host stalled this test past it (read on the store's clock).
	const brief = 200 * time.Millisecond
	before := expiryNow()
	ok, _ = attempt(t, s, "rw", "writer", contract.LockExclusive, time.Minute, brief)
	require.False(t, ok)
	ok, _ = attempt(t, s, "rw", "third", contract.LockShared, time.Minute, 0)
	if expiryNow()-before < int64(brief) {
		require.False(t, ok, "claimed")
	}
	sleepOnStoreClock(brief)
	ok, _ = attempt(t, s, "rw", "third", contract.LockShared, time.Minute, 0)
	assert.True(t, ok, "the claim lapsed")

	// Only lapsed holds left: a writer is granted.
	before = expiryNow()
	ok, _ = attempt(t, s, "w", "reader", contract.LockShared, brief, 0)
	require.True(t, ok)
	ok, _ = attempt(t, s, "w", "writer", contract.LockExclusive, 0, 0)
	if expiryNow()-before < int64(brief) {
		require.False(t, ok)
	}
	sleepOnStoreClock(brief)
	ok, _ = attempt(t, s, "w", "writer", contract.LockExclusive, 0, 0)
	assert.True(t, ok)
	ttl, found, err := s.PTTL("w")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, time.Duration(-1), ttl, "ttl 0: the hold never lapses")
}

func TestRefreshMovesOneHoldsDeadline(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 8 << 20})
	pttl := func(key string) time.Duration {
		t.Helper()
		d, found, err := s.PTTL(key)
		require.NoError(t, err)
		require.True(t, found)
		return d
	}
	refresh := func(key, token string, ttl time.Duration) bool {
		t.Helper()
		ok, err := s.LockRefresh(key, []byte(token), ttl)
		require.NoError(t, err)
		return ok
	}
	ok, _ := attempt(t, s, "rw", "a", contract.LockShared, time.Minute, 0)
	require.True(t, ok)
	ok, _ = attempt(t, s, "rw", "b", contract.LockShared, 2*time.Minute, 0)
	require.True(t, ok)
	assert.Greater(t, pttl("rw"), time.Minute, "the record lives until its latest deadline")
	require.True(t, refresh("rw", "a", 0))
	assert.Equal(t, time.Duration(-1), pttl("rw"), "a hold without a deadline keeps the record")
	require.True(t, refresh("rw", "a", 5*time.Millisecond))
	require.True(t, refresh("rw", "b", 5*time.Millisecond))
	tick := time.Duration(coarse.Resolution()) // TTLs are kept to within a tick
	assert.LessOrEqual(t, pttl("rw"), 5*time.Millisecond+tick)
	sleepOnStoreClock(5 * time.Millisecond)
	assert.False(t, refresh("rw", "a", time.Minute), "lapsed")
	_, n := info(t, s, "rw")
	assert.Zero(t, n)

	ok, _ = attempt(t, s, "x", "w", contract.LockExclusive, time.Minute, 0)
	require.True(t, ok)
	require.True(t, refresh("x", "w", 0))
	assert.Equal(t, time.Duration(-1), pttl("x"))
	require.True(t, refresh("x", "w", time.Hour))
	assert.Greater(t, pttl("x"), time.Minute)
	assert.False(t, refresh("x", "v", 0))
	assert.Greater(t, pttl("x"), time.Minute, "a refused refresh changes nothing")
}

func TestLockEntriesAreLocks(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 8 << 20, Policy: contract.AllKeysLRU})
	ok, _ := attempt(t, s, "r", "reader", contract.LockShared, time.Minute, 0)
	require.True(t, ok)
	ok, _ = attempt(t, s, "x", "writer", contract.LockExclusive, time.Minute, 0)
	require.True(t, ok)
	for _, key := range []string{"r", "x"} {
		sh, _, tag := s.locate(key)
		require.NoError(t, s.lock(sh))
		_, b, _ := sh.lookup(tag, key)
		pinned := b != noBlock && sh.entryPinned(b)
		s.unlock(sh)
		assert.True(t, pinned, "%s is never evicted", key)
	}
	// Writes far beyond the limit evict, but never a lock.
	v := make([]byte, 64<<10)
	for i := 0; i < 400; i++ {
		require.NoError(t, s.Set(fmt.Sprint("fill:", i), v, 0))
	}
	assert.True(t, release(t, s, "r", "reader"))
	assert.True(t, release(t, s, "x", "writer"))
}

func TestBadLockCallsChangeNothing(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 8 << 20})
	ok, _ := attempt(t, s, "rw", "reader", contract.LockShared, time.Minute, 0)
	require.True(t, ok)
	bad := []func() error{
		func() error { _, _, err := s.LockAttempt("rw", nil, contract.LockShared, 0, 0); return err },
		func() error {
			_, _, err := s.LockAttempt("rw", make([]byte, 256), contract.LockShared, 0, 0)
			return err
		},
		func() error { _, _, err := s.LockAttempt("rw", []byte("t"), 2, 0, 0); return err },
		func() error { _, _, err := s.LockAttempt("rw", []byte("t"), contract.LockShared, -1, 0); return err },
		func() error { _, _, err := s.LockAttempt("rw", []byte("t"), contract.LockExclusive, 0, -1); return err },
		func() error { _, _, err := s.LockAttempt("", []byte("t"), contract.LockShared, 0, 0); return err },
		func() error {
			_, _, err := s.LockAttempt("rw", []byte("reader"), contract.LockShared, 0, 0)
			return err
		},
		func() error { _, err := s.LockRelease("", []byte("reader")); return err },
		func() error { _, err := s.LockRefresh("rw", []byte("reader"), -1); return err },
		func() error { _, _, err := s.LockInfo(""); return err },
	}
	fence, err := s.Fence("rw")
	require.NoError(t, err)
	for i, f := range bad {
		assert.ErrorIs(t, f(), contract.ErrInvalidArgument, "call %d", i)
	}
	mode, n := info(t, s, "rw")
	assert.Equal(t, contract.LockShared, mode)
	assert.Equal(t, 1, n)
	after, err := s.Fence("rw")
	require.NoError(t, err)
	assert.Equal(t, fence, after, "no fence minted")
	assert.True(t, release(t, s, "rw", "reader"))
}

func TestFencesIncreaseAcrossModesAndSetNXFenced(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 8 << 20})
	var last int64
	next := func(f int64) {
		t.Helper()
		require.Greater(t, f, last)
		latest, err := s.Fence("rw")
		require.NoError(t, err)
		require.Equal(t, f, latest, "Fence reads the latest grant")
		last = f
	}
	for round := 0; round < 20; round++ {
		out, f, err := backend.SetNXFenced(s, "rw", []byte("setnx"), time.Minute)
		require.NoError(t, err)
		require.Equal(t, contract.Inserted, out)
		next(f)
		ok, _ := attempt(t, s, "rw", "reader", contract.LockShared, time.Minute, 0)
		require.False(t, ok)
		require.True(t, release(t, s, "rw", "setnx"))
		ok, f = attempt(t, s, "rw", "reader", contract.LockShared, time.Minute, 0)
		require.True(t, ok)
		next(f)
		ok, f = attempt(t, s, "rw", "reader2", contract.LockShared, time.Minute, 0)
		require.True(t, ok)
		next(f)
		ok, _ = attempt(t, s, "rw", "writer", contract.LockExclusive, time.Minute, contract.WriterClaim)
		require.False(t, ok)
		latest, _ := s.Fence("rw")
		require.Equal(t, last, latest, "a refusal mints nothing")
		require.True(t, release(t, s, "rw", "reader"))
		require.True(t, release(t, s, "rw", "reader2"))
		ok, f = attempt(t, s, "rw", "writer", contract.LockExclusive, time.Minute, contract.WriterClaim)
		require.True(t, ok)
		next(f)
		// The grant's fence guards writes as SetNXFenced's does.
		wrote, err := backend.SetFenced(s, "data", []byte("v"), 0, "rw", f)
		require.NoError(t, err)
		require.True(t, wrote)
		wrote, err = backend.SetFenced(s, "data", []byte("v"), 0, "rw", f-1)
		require.NoError(t, err)
		require.False(t, wrote)
		require.True(t, release(t, s, "rw", "writer"))
		require.NoError(t, s.Flush()) // flush leaves fences as they are
	}
}

// TestTheLockMembersApplyTheDeadHolderRule: a lock granted Bound (the
// session's, ephpm_kv_lock(bound: true)) keeps its holder through
// lock_refresh, and once that process is dead lock_acquire and lock_info
// find the name free, as every other call does (entry.go).
func TestTheLockMembersApplyTheDeadHolderRule(t *testing.T) {
	a := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	b, err := Open(testName(t), Options{})
	require.NoError(t, err)
	defer b.Close()
	const lock = "job:lock"
	out, err := sessionGrants{b}.SetNX(lock, []byte("token"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	refreshed, err := b.LockRefresh(lock, []byte("token"), time.Hour)
	require.NoError(t, err)
	require.True(t, refreshed)
	out, _, err = a.LockAttempt(lock, []byte("other"), contract.LockExclusive, time.Minute, 0)
	require.NoError(t, err)
	require.Equal(t, contract.Exists, out, "held by a live process")

	// b's process dies: its slot names a process that has exited.
	atomic.StoreUint64(a.g.procIdent(b.slot), atomic.LoadUint64(a.g.procIdent(deadSlot(t, a))))
	_, holders, err := a.LockInfo(lock)
	require.NoError(t, err)
	assert.Zero(t, holders, "lock_info finds the dead holder's lock lapsed, refreshed or not")
	out, fence, err := a.LockAttempt(lock, []byte("other"), contract.LockExclusive, time.Minute, 0)
	require.NoError(t, err)
	assert.Equal(t, contract.Inserted, out, "lock_acquire takes it")
	assert.Positive(t, fence)
}
