package kv

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWaitOnFreeKeyReturnsAtOnce(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	assert.True(t, s.Wait("absent", time.Hour))
	require.NoError(t, s.Set("k", []byte("v"), 0))
	assert.False(t, s.Wait("k", 0), "zero timeout on a held key")
}

func TestWaitTimesOutWhileHeld(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	require.NoError(t, s.Set("k", []byte("v"), 0))
	start := time.Now()
	assert.False(t, s.Wait("k", 20*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	assert.Empty(t, s.shardFor("k").waiters, "a timed-out waiter leaves no trace")
}

// Each removal wakes the oldest waiter, and only it.
func TestRemovalWakesWaitersOneAtATimeOldestFirst(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	require.NoError(t, s.Set("lock", []byte("held"), 0))

	const n = 5
	woke := make(chan int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if s.Wait("lock", 10*time.Second) {
				woke <- i
			}
		}(i)
		// Queue them in a known order: wait until waiter i is registered.
		require.Eventually(t, func() bool {
			sh := s.shardFor("lock")
			sh.mu.Lock()
			defer sh.mu.Unlock()
			return sh.waiters["lock"] != nil && len(sh.waiters["lock"].list) == i+1
		}, 5*time.Second, time.Millisecond)
	}
	for i := 0; i < n; i++ {
		require.True(t, s.Del("lock"))
		select {
		case got := <-woke:
			assert.Equal(t, i, got, "woken in arrival order")
		case <-time.After(5 * time.Second):
			t.Fatalf("waiter %d not woken", i)
		}
		select {
		case extra := <-woke:
			t.Fatalf("removal %d woke a second waiter %d", i, extra)
		default:
		}
		require.NoError(t, s.Set("lock", []byte("held"), 0))
	}
	wg.Wait()
}

func TestWaitReturnsWhenTheTTLPasses(t *testing.T) {
	s := New(Options{SweepInterval: -1}) // no sweeper: only the TTL ends the wait
	defer s.Close()
	require.NoError(t, s.Set("lock", []byte("v"), 30*time.Millisecond))
	start := time.Now()
	assert.True(t, s.Wait("lock", 10*time.Second))
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestDelIfEqAndExpiryWakeWaiters(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	require.NoError(t, s.Set("lock", []byte("tok"), 0))
	done := make(chan bool)
	go func() { done <- s.Wait("lock", 10*time.Second) }()
	require.Eventually(t, func() bool {
		sh := s.shardFor("lock")
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return sh.waiters["lock"] != nil
	}, 5*time.Second, time.Millisecond)
	require.True(t, s.DelIfEq("lock", []byte("tok")))
	assert.True(t, <-done)
}

func TestSetGuarded(t *testing.T) {
	s, clk := newTestStore(t)
	ok, err := s.SetGuarded("data", []byte("v1"), time.Minute, "lock", []byte("tok"))
	require.NoError(t, err)
	assert.False(t, ok, "no guard entry")
	_, present := s.Get("data")
	assert.False(t, present)

	_, err = s.SetNX("lock", []byte("tok"), time.Second)
	require.NoError(t, err)
	ok, _ = s.SetGuarded("data", []byte("v1"), time.Minute, "lock", []byte("other"))
	assert.False(t, ok, "wrong token")
	ok, _ = s.SetGuarded("data", []byte("v1"), time.Minute, "lock", []byte("tok"))
	assert.True(t, ok)
	v, _ := s.Get("data")
	assert.Equal(t, "v1", string(v))

	clk.advance(time.Second) // the lock expires
	ok, _ = s.SetGuarded("data", []byte("v2"), time.Minute, "lock", []byte("tok"))
	assert.False(t, ok, "an expired guard never matches")
	v, _ = s.Get("data")
	assert.Equal(t, "v1", string(v), "a refused write changes nothing")

	_, err = s.SetGuarded("data", nil, 0, "", []byte("tok"))
	assert.ErrorIs(t, err, ErrInvalidArgument)
	_, err = s.SetGuarded("data", nil, -1, "lock", []byte("tok"))
	assert.ErrorIs(t, err, ErrInvalidArgument)

	// Guard and data in the same shard lock once (no self-deadlock).
	_, _ = s.SetNX("same", []byte("tok"), 0)
	ok, _ = s.SetGuarded("same", []byte("tok"), 0, "same", []byte("tok"))
	assert.True(t, ok)
}

// A writer whose lock was taken over races the new holder: only the holder's
// guarded writes land.
func TestSetGuardedRacesLockTakeover(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	for r := 0; r < 300; r++ {
		require.NoError(t, s.Set("lock", []byte("A"), 0))
		require.NoError(t, s.Set("data", []byte("orig"), 0))
		race(2, func(i int) bool {
			if i == 0 { // the stale holder A keeps writing
				for j := 0; j < 20; j++ {
					s.SetGuarded("data", []byte("A"), 0, "lock", []byte("A"))
				}
			} else { // B takes over and writes once it holds the lock
				require.NoError(t, s.Set("lock", []byte("B"), 0))
				ok, _ := s.SetGuarded("data", []byte("B"), 0, "lock", []byte("B"))
				require.True(t, ok)
			}
			return false
		})
		v, _ := s.Get("data")
		require.Equal(t, "B", string(v), "round %d", r)
	}
}

func TestExpire(t *testing.T) {
	s, clk := newTestStore(t)
	ok, err := s.Expire("k", time.Second)
	require.NoError(t, err)
	assert.False(t, ok, "absent")

	require.NoError(t, s.Set("k", []byte("v"), time.Second))
	clk.advance(900 * time.Millisecond)
	ok, _ = s.Expire("k", time.Second)
	assert.True(t, ok)
	clk.advance(900 * time.Millisecond)
	v, present := s.Get("k")
	assert.True(t, present, "the TTL was refreshed")
	assert.Equal(t, "v", string(v), "the value untouched")

	ok, _ = s.Expire("k", 0)
	assert.True(t, ok)
	clk.advance(time.Hour)
	_, present = s.Get("k")
	assert.True(t, present, "ttl 0 removes the expiry")

	require.NoError(t, s.Set("e", []byte("v"), time.Second))
	clk.advance(time.Second)
	ok, _ = s.Expire("e", time.Hour)
	assert.False(t, ok, "an expired entry cannot be revived")

	_, err = s.Expire("k", -time.Second)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	_, err = s.Expire("", time.Second)
	assert.ErrorIs(t, err, ErrInvalidArgument)
}
