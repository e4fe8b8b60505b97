package redisstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/lockwait"
	"github.com/ephpm/ephpm/sessionkeys"
)

// fill makes srv a full noeviction server (maxmemory below what a 2 MiB
// ballast takes) until t ends.
func fill(t *testing.T, a *redis.Client) {
	require.NoError(t, a.Set(ctx, "ballast", make([]byte, 2<<20), 0).Err())
	require.NoError(t, a.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	require.NoError(t, a.ConfigSet(ctx, "maxmemory", "1mb").Err())
	t.Cleanup(func() {
		a.ConfigSet(ctx, "maxmemory", "0")
		a.Del(ctx, "ballast")
	})
	require.ErrorContains(t, a.Set(ctx, "probe", "x", 0).Err(), "OOM", "full: a SET is refused")
}

// What the store's scripts rely on (see "A full server", queue.go): a full
// noeviction server refuses a command that may take memory only as a
// script's first write, runs every write after one, and hands a refusal
// to redis.pcall as an error reply whose text begins with OOM.
func TestAFullServerRefusesOnlyAScriptsFirstWrite(t *testing.T) {
	srv := redistest.Start(t)
	a := admin(t, srv.Addr)
	require.NoError(t, a.Set(ctx, "k", "v", 0).Err())
	fill(t, a)
	err := a.Eval(ctx, "redis.call('set', KEYS[1], 'w') return 1", []string{"k"}).Err()
	require.ErrorContains(t, err, "OOM", "a SET as the first write")
	n, err := a.Eval(ctx, "redis.call('del', KEYS[1]) redis.call('set', KEYS[1], 'w', 'PX', 60000) return 1", []string{"k"}).Int()
	require.NoError(t, err, "a SET after a DEL")
	assert.Equal(t, 1, n)
	assert.Equal(t, "w", a.Get(ctx, "k").Val())
	n, err = a.Eval(ctx, "redis.call('pexpire', KEYS[1], 60000) redis.call('zadd', KEYS[2], 1, 'm') return 1", []string{"k", "z"}).Int()
	require.NoError(t, err, "a ZADD after a PEXPIRE")
	assert.Equal(t, 1, n)
	s, err := a.Eval(ctx, "local r = redis.pcall('set', KEYS[1], 'x') redis.call('del', KEYS[2]) return r.err", []string{"k", "z"}).Text()
	require.NoError(t, err, "pcall: the script goes on")
	assert.Regexp(t, "^OOM", s)
	assert.Equal(t, "w", a.Get(ctx, "k").Val(), "the refused SET wrote nothing")
	assert.Zero(t, a.Exists(ctx, "z").Val(), "the DEL after it ran")
}

// waitingInLine waits until key's line holds one waiter and returns its lease
// key, failing t if the waiter's call ends first (done).
func waitingInLine(t *testing.T, a *redis.Client, key string, done <-chan error) string {
	t.Helper()
	_, prefix, _ := queueKeys(key)
	var lease string
	var ended bool
	var err error
	require.Eventually(t, func() bool {
		select {
		case err = <-done:
			ended = true
			return true
		default:
		}
		ks := a.Keys(ctx, prefix+"*").Val()
		if len(ks) == 1 {
			lease = ks[0]
		}
		return lease != ""
	}, hangCatch, 5*time.Millisecond, "the waiter is in line")
	require.False(t, ended, "the waiter's call ended before it stood in line: %v", err)
	return lease
}

// waiterLease is the place in line of the waiters on a full server: long
// enough that no stall of a loaded host loses it between two attempts
// (lockwait.LineStep apart), so that what is watched is the renewal.
const waiterLease = 30 * time.Second

// leaseKept watches lease until a renewal of it (its PTTL going up), which
// a waiter already in line makes with each attempt, on the full server
// too; the waiter is still waiting.
func leaseKept(t *testing.T, a *redis.Client, lease string, done <-chan error) {
	t.Helper()
	last := a.PTTL(ctx, lease).Val()
	require.Greater(t, last, lockwait.LineStep+lockwait.LeaseMargin, "the waiter has the lease its Locker gave it")
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			t.Fatalf("the waiter's call ended on the full server: %v", err)
		default:
		}
		now := a.PTTL(ctx, lease).Val()
		require.Greater(t, now, time.Duration(0), "the lease is there")
		renewed := now > last
		last = now
		return renewed
	}, hangCatch, 20*time.Millisecond, "the lease is renewed on the full server")
}

// refusedThenReleased checks that a write-and-release the full server
// refused changed nothing (the lock still holds holder's token), then
// releases it as its holder does after the refusal (the session handler at
// close), which the full server runs.
func refusedThenReleased(t *testing.T, s *Store, a *redis.Client, key string, holder []byte) {
	t.Helper()
	assert.Equal(t, string(holder), a.Get(ctx, s.redisKey(key)).Val(), "a refused call changes nothing: the lock is held")
	ok, err := s.DelIfEq(key, holder)
	require.NoError(t, err)
	assert.True(t, ok, "released by its holder")
}

// On a full noeviction server every member that releases a lock releases
// it, handing it to the waiter in line, who takes it at once, not at the
// lock's TTL (an hour here), having kept its place through a renewal on
// the full server; a write the server refuses is an error that changes
// nothing (the old value kept, the lock held until its holder releases
// it). The server fills only once the waiter stands in line: a new waiter
// is refused there (TestAFullServerKeepsTheLineMoving).
func TestAFullServerReleasesLocksAndHandsThemOn(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	a := admin(t, srv.Addr)
	holder := []byte("holder")
	const ttl = time.Hour
	exclusive := func(s *Store, key string) (bool, error) {
		res, err := (&lockwait.Locker{Store: s, Lease: waiterLease}).Acquire(key, []byte("next"), ttl, 5*hangCatch)
		return res.Acquired, err
	}
	for _, tc := range []struct {
		name    string
		hold    func(t *testing.T, s *Store, key string) int64 // the holder's fence, if any
		wait    func(s *Store, key string) (bool, error)
		release func(t *testing.T, key, data string, fence int64)
	}{
		{"Del", nil, exclusive, func(t *testing.T, key, _ string, _ int64) {
			ok, err := s.Del(key)
			require.NoError(t, err)
			assert.True(t, ok)
		}},
		{"DelIfEq", nil, exclusive, func(t *testing.T, key, _ string, _ int64) {
			ok, err := s.DelIfEq(key, holder)
			require.NoError(t, err)
			assert.True(t, ok)
		}},
		{"SetGuardedRelease", nil, exclusive, func(t *testing.T, key, data string, _ int64) {
			ok, err := backend.SetGuardedRelease(s, data, []byte("new"), ttl, key, holder)
			require.ErrorIs(t, err, contract.ErrNoMemory, "the write is refused")
			assert.False(t, ok)
			refusedThenReleased(t, s, a, key, holder)
		}},
		{"ExpireGuardedRelease", nil, exclusive, func(t *testing.T, key, data string, _ int64) {
			ok, err := backend.ExpireGuardedRelease(s, data, 2*ttl, key, holder)
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Greater(t, a.PTTL(ctx, s.redisKey(data)).Val(), ttl, "refreshed")
		}},
		{"SetFencedRelease", fencedHold, exclusive, func(t *testing.T, key, data string, fence int64) {
			ok, err := backend.SetFencedRelease(s, data, []byte("new"), ttl, key, fence, holder)
			require.ErrorIs(t, err, contract.ErrNoMemory, "the write is refused")
			assert.False(t, ok)
			refusedThenReleased(t, s, a, key, holder)
		}},
		{"DelFencedRelease", fencedHold, exclusive, func(t *testing.T, key, data string, fence int64) {
			ok, err := backend.DelFencedRelease(s, data, key, fence, holder)
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Zero(t, a.Exists(ctx, s.redisKey(data)).Val(), "removed")
		}},
		{"LockReleaseExclusive", func(t *testing.T, s *Store, key string) int64 {
			return granted(t, s, key, string(holder), contract.LockExclusive, ttl)
		}, lockWaiter(contract.LockExclusive), func(t *testing.T, key, _ string, _ int64) {
			ok, err := s.LockRelease(key, holder)
			require.NoError(t, err)
			assert.True(t, ok)
		}},
		{"LockReleaseReaders", func(t *testing.T, s *Store, key string) int64 {
			granted(t, s, key, "reader1", contract.LockShared, ttl)
			return granted(t, s, key, string(holder), contract.LockShared, ttl)
		}, lockWaiter(contract.LockExclusive), func(t *testing.T, key, _ string, _ int64) {
			for _, tok := range []string{"reader1", string(holder)} {
				ok, err := s.LockRelease(key, []byte(tok))
				require.NoError(t, err)
				assert.True(t, ok, "%s's hold released", tok)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "full" + tc.name
			key, data := sessionkeys.LockKey(name), sessionkeys.DataKey(name)
			require.NoError(t, s.Set(data, []byte("old"), ttl))
			var fence int64
			if tc.hold != nil {
				fence = tc.hold(t, s, key)
			} else {
				out, err := s.SetNX(key, holder, ttl)
				require.NoError(t, err)
				require.Equal(t, contract.Inserted, out)
			}
			done := make(chan error, 1)
			var acquired bool
			go func() {
				var err error
				acquired, err = tc.wait(s, key)
				done <- err
			}()
			lease := waitingInLine(t, a, s.redisKey(key), done)
			fill(t, a)
			leaseKept(t, a, lease, done)
			released := time.Now()
			tc.release(t, key, data, fence)
			select {
			case err := <-done:
				require.NoError(t, err)
				assert.True(t, acquired, "the waiter took the lock")
				t.Logf("taken %v after the release", time.Since(released))
			case <-time.After(hangCatch): // a hang catch, not a speed bound
				t.Fatalf("the waiter did not take the lock within %v of the release (its TTL is an hour)", hangCatch)
			}
			if v, _, err := get(t, s, data); err == nil && tc.name != "DelFencedRelease" {
				assert.Equal(t, "old", string(v), "a refused write keeps the old value")
			}
		})
	}
}

// fencedHold takes the lock with a fence, as a fenced session does.
func fencedHold(t *testing.T, s *Store, key string) int64 {
	t.Helper()
	out, _, _, fence, err := backend.SetNXGetFenced(s, key, []byte("holder"), time.Minute, "unread", nil)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	return fence
}

// lockWaiter is a read/write lock's waiter in mode.
func lockWaiter(mode contract.LockMode) func(s *Store, key string) (bool, error) {
	return func(s *Store, key string) (bool, error) {
		res, _, err := (&lockwait.Locker{Store: s, Lease: waiterLease}).AcquireLock(s, key, []byte(fmt.Sprintf("next-%d", mode)), mode, time.Minute, 5*hangCatch)
		return res.Acquired, err
	}
}

// A waiter that leaves the line on a full server hands on a lock that was
// handed to it, to the next in line; a new waiter is refused there
// (contract.ErrNoMemory: its place would take memory), having changed nothing.
func TestAFullServerKeepsTheLineMoving(t *testing.T) {
	srv, s, key := heldLock(t, "fullleave")
	a := admin(t, srv.Addr)
	// The head's place (a lease of a minute: nothing renews it) lasts until
	// the hand-off below, however slow the host; every wait is a hang catch.
	out, err := setNXInLine(s, key, []byte("first"), time.Minute, "firstid", time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Exists, out, "in line")
	done := make(chan error, 1)
	var acquired bool
	go func() {
		res, err := (&lockwait.Locker{Store: s, Lease: waiterLease}).Acquire(key, []byte("next"), time.Minute, 5*hangCatch)
		acquired = res.Acquired
		done <- err
	}()
	for end := time.Now().Add(hangCatch); lineLength(t, s, key) < 2; {
		require.True(t, time.Now().Before(end), "the second waiter is in line")
		time.Sleep(5 * time.Millisecond)
	}
	fill(t, a)

	_, err = setNXInLine(s, key, []byte("late"), time.Minute, "lateid", 10*time.Second)
	require.ErrorIs(t, err, contract.ErrNoMemory, "no place for a new waiter")
	assert.Equal(t, 2, lineLength(t, s, key), "nothing changed")

	ok, err := s.DelIfEq(key, []byte("holder"))
	require.NoError(t, err)
	require.True(t, ok)
	v, _, err := get(t, s, key)
	require.NoError(t, err)
	require.Equal(t, "first", string(v), "handed to the head on the full server")
	require.NoError(t, s.LeaveLine(key, "firstid"))
	select {
	case err := <-done:
		require.NoError(t, err)
		assert.True(t, acquired, "the next waiter took the lock the head left")
	case <-time.After(hangCatch):
		t.Fatalf("the next waiter did not take the lock within %v", hangCatch)
	}
}

// A guarded write that releases nothing, refused by a full server, is the
// server's refusal (contract.ErrNoMemory), with the guard still held; so is a
// fenced write whose lock is no longer held (nothing to release).
func TestAFullServerRefusesAWriteThatReleasesNothing(t *testing.T) {
	srv, s, key := heldLock(t, "fullguard")
	data := sessionkeys.DataKey("fullguard")
	require.NoError(t, s.Set(data, []byte("old"), time.Minute))
	fenced := sessionkeys.LockKey("fullfenced")
	_, _, _, fence, err := backend.SetNXGetFenced(s, fenced, []byte("gone"), time.Minute, "unread", nil)
	require.NoError(t, err)
	ok, err := s.DelIfEq(fenced, []byte("gone"))
	require.NoError(t, err)
	require.True(t, ok)
	fill(t, admin(t, srv.Addr))

	ok, err = backend.SetGuarded(s, data, []byte("new"), time.Minute, key, []byte("holder"))
	require.ErrorIs(t, err, contract.ErrNoMemory)
	assert.False(t, ok)
	ok, err = backend.SetFencedRelease(s, data, []byte("new"), time.Minute, fenced, fence, []byte("gone"))
	require.ErrorIs(t, err, contract.ErrNoMemory)
	assert.NotContains(t, err.Error(), "released", "there was no lock to release")
	assert.False(t, ok)
	v, _, err := get(t, s, key)
	require.NoError(t, err)
	assert.Equal(t, "holder", string(v), "the guard is still held")
	v, _, err = get(t, s, data)
	require.NoError(t, err)
	assert.Equal(t, "old", string(v))
}

// A full server grants no new lock: a caller without a place in line makes
// no write before its lock's SET (not even one that changes nothing, which
// would let the server run the rest of the script), so the server refuses
// it, with nothing changed, on every path that takes a free name.
func TestAFullServerGrantsNoNewLock(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	fill(t, admin(t, srv.Addr))
	free := sessionkeys.LockKey("fullnew")
	_, err := s.SetNX(free, []byte("a"), time.Minute)
	assert.ErrorIs(t, err, contract.ErrNoMemory, "set_nx")
	_, err = setNXInLine(s, free, []byte("b"), time.Minute, "newid", 10*time.Second)
	assert.ErrorIs(t, err, contract.ErrNoMemory, "an attempt through the line")
	for _, mode := range []contract.LockMode{contract.LockExclusive, contract.LockShared} {
		_, _, err = s.LockAttempt(free, []byte("c"), mode, time.Minute, 0)
		assert.ErrorIs(t, err, contract.ErrNoMemory, "lock_acquire, mode %v", mode)
		_, _, err = (&lockwait.Locker{Store: s}).AcquireLock(s, free, []byte("d"), mode, time.Minute, time.Second)
		assert.ErrorIs(t, err, contract.ErrNoMemory, "lock_acquire in line, mode %v", mode)
	}
	v, found, err := get(t, s, free)
	require.NoError(t, err)
	assert.False(t, found, "nothing granted: %q", v)
	assert.Zero(t, lineLength(t, s, free), "nobody in line")
}
