package memstore

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

// hangCatch bounds the waits of these tests: they end on a wake-up or a
// TTL, and the bound only catches a hang (a loaded host under the race
// detector runs a goroutine seconds late), never the host's pace.
const hangCatch = 2 * time.Minute

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
			if s.Wait("lock", 5*hangCatch) {
				woke <- i
			}
		}(i)
		// Queue them in a known order: wait until waiter i is registered.
		require.Eventually(t, func() bool {
			sh := s.shardFor("lock")
			sh.mu.Lock()
			defer sh.mu.Unlock()
			return sh.waiters["lock"] != nil && len(sh.waiters["lock"].list) == i+1
		}, hangCatch, time.Millisecond)
	}
	for i := 0; i < n; i++ {
		require.True(t, s.Del("lock"))
		select {
		case got := <-woke:
			assert.Equal(t, i, got, "woken in arrival order")
		case <-time.After(hangCatch):
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
	// A wait that ran out would also find the key gone: it is told apart
	// by its length, past hangCatch (not the host's pace).
	assert.True(t, s.Wait("lock", 2*hangCatch))
	assert.Less(t, time.Since(start), hangCatch)
}

func TestDelIfEqAndExpiryWakeWaiters(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	require.NoError(t, s.Set("lock", []byte("tok"), 0))
	done := make(chan bool)
	go func() { done <- s.Wait("lock", hangCatch) }()
	require.Eventually(t, func() bool {
		sh := s.shardFor("lock")
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return sh.waiters["lock"] != nil
	}, hangCatch, time.Millisecond)
	require.True(t, s.DelIfEq("lock", []byte("tok")))
	assert.True(t, <-done)
}

// A TTL renewed while a caller waits keeps it waiting, in its place in the
// line, until the entry goes: it neither returns "held" when the first TTL
// would have passed nor loses its turn to a later waiter. The store's clock
// is a fake one that stands still, so that the renewal always comes before
// the first TTL passes on it, however late the host runs this goroutine;
// the waiter still wakes (on the real clock) when that TTL would have
// passed, and looks again.
func TestARenewedTTLKeepsTheWaiterInLine(t *testing.T) {
	s, _ := newTestStore(t)
	require.NoError(t, s.Set("lock", []byte("tok"), 40*time.Millisecond))
	queued := func(n int) func() bool {
		return func() bool {
			sh := s.shardFor("lock")
			sh.mu.Lock()
			defer sh.mu.Unlock()
			q := sh.waiters["lock"]
			return q != nil && len(q.list) == n
		}
	}
	first, second := make(chan bool, 1), make(chan bool, 1)
	go func() { first <- s.Wait("lock", hangCatch) }()
	require.Eventually(t, queued(1), hangCatch, time.Millisecond)
	ok, err := s.Expire("lock", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	go func() { second <- s.Wait("lock", hangCatch) }()
	require.Eventually(t, queued(2), hangCatch, time.Millisecond)
	time.Sleep(40*time.Millisecond + 3*time.Duration(s.tick)) // past the first TTL's wake-up
	select {
	case r := <-first:
		t.Fatalf("the waiter returned %v although the renewed entry is still there", r)
	default:
	}
	require.True(t, s.DelIfEq("lock", []byte("tok")))
	assert.True(t, <-first, "the oldest waiter is woken by the removal")
	select {
	case r := <-second:
		t.Fatalf("the later waiter was woken (%v) instead of, or as well as, the first", r)
	case <-time.After(50 * time.Millisecond):
	}
}
