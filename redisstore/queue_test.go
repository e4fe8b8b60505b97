package redisstore

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/kv"
	"github.com/ephpm/ephpm/session"
)

func TestQueueKeysShareTheLocksSlot(t *testing.T) {
	for _, rk := range []string{"session_lock:{abc}", "lock:x", "a{b", "a{b}c}"} {
		line, prefix, ok := queueKeys(rk)
		require.True(t, ok, rk)
		assert.Equal(t, keySlot(rk), keySlot(line), rk)
		assert.Equal(t, keySlot(rk), keySlot(prefix+"someid"), rk)
	}
	for _, rk := range []string{"a}b", "{}x", "x{}"} {
		_, _, ok := queueKeys(rk)
		assert.False(t, ok, "%s is hashed whole and holds a '}': no tag names its slot", rk)
	}
}

// lineLength is how many waiters are in key's line.
func lineLength(t *testing.T, s *Store, key string) int {
	line, _, _ := queueKeys(testKey(key))
	r, err := s.do(nil, "zcard", line)
	require.NoError(t, err)
	return int(r.n)
}

// Waiters in separate processes (each a Store with a hub of its own) get
// the lock in the order they came, one release at a time: each waiter
// starts only once the one before it is in line. Every other waiter takes
// the lock as the session handler does where the library has the fenced
// members (AcquireGetFenced, released by SetFencedRelease): one line for
// both.
func TestTheLockPassesInArrivalOrderAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	const n = 6
	stores := make([]*Store, n+1)
	for i := range stores {
		s, err := Open("redis://"+srv.Addr, testOptions)
		require.NoError(t, err)
		defer s.Close()
		stores[i] = s
	}
	key := session.LockKey("order")
	out, err := stores[0].SetNX(key, []byte("holder"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, kv.Inserted, out)

	var mu sync.Mutex
	var got []int
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l := &session.Locker{Store: stores[i]}
			tok := []byte("w" + strconv.Itoa(i))
			var res session.Result
			var fence int64
			var err error
			if i%2 == 0 {
				res, _, fence, err = l.AcquireGetFenced(stores[i], key, tok, time.Minute, 30*time.Second,
					session.DataKey("order"), nil)
			} else {
				res, err = l.Acquire(key, tok, time.Minute, 30*time.Second)
			}
			if !assert.NoError(t, err) || !assert.True(t, res.Acquired) {
				return
			}
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
			var released bool
			if i%2 == 0 {
				assert.Positive(t, fence)
				released, err = stores[i].SetFencedRelease(session.DataKey("order"), tok, time.Minute, key, fence, tok)
			} else {
				released, err = stores[i].DelIfEq(key, tok)
			}
			assert.NoError(t, err)
			assert.True(t, released)
		}(i)
		require.Eventually(t, func() bool { return lineLength(t, stores[0], key) == i }, 10*time.Second, time.Millisecond,
			"waiter %d in line", i)
	}
	released, err := stores[0].DelIfEq(key, []byte("holder"))
	require.NoError(t, err)
	require.True(t, released)
	wg.Wait()
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6}, got)
	assert.Equal(t, 0, lineLength(t, stores[0], key), "nobody left in line")
}

// A waiter whose process died (it queued, then never came back) holds up
// the line for its lease only; the next one gets the lock after it.
func TestADeadWaiterHoldsUpTheLineOnlyForItsLease(t *testing.T) {
	srv := redistest.Start(t)
	s, err := Open("redis://"+srv.Addr, testOptions)
	require.NoError(t, err)
	defer s.Close()
	key := session.LockKey("dead")
	_, err = s.SetNX(key, []byte("holder"), time.Minute)
	require.NoError(t, err)
	const lease = 300 * time.Millisecond
	out, err := s.SetNXInLine(key, []byte("dead"), time.Minute, "deadwaiter", lease)
	require.NoError(t, err)
	require.Equal(t, kv.Exists, out, "in line")
	done := make(chan time.Duration)
	go func() {
		l := &session.Locker{Store: s}
		start := time.Now()
		res, err := l.Acquire(key, []byte("next"), time.Minute, 30*time.Second)
		assert.NoError(t, err)
		assert.True(t, res.Acquired)
		done <- time.Since(start)
	}()
	require.Eventually(t, func() bool { return lineLength(t, s, key) == 2 }, 10*time.Second, time.Millisecond)
	released, err := s.DelIfEq(key, []byte("holder"))
	require.NoError(t, err)
	require.True(t, released)
	took := <-done
	// Not before the dead waiter's lease lapsed, and well within the wait.
	assert.Greater(t, took, lease/2, "the dead waiter kept its place while its lease was live")
	assert.Less(t, took, 10*time.Second)
	t.Logf("the next waiter had the lock after %v (lease %v)", took.Round(time.Millisecond), lease)
}

// A waiter that runs out of time leaves the line at once, and the next in
// line is told if the lock is free.
func TestAWaiterOutOfTimeLeavesTheLine(t *testing.T) {
	srv := redistest.Start(t)
	s, err := Open("redis://"+srv.Addr, testOptions)
	require.NoError(t, err)
	defer s.Close()
	key := session.LockKey("leave")
	_, err = s.SetNX(key, []byte("holder"), time.Minute)
	require.NoError(t, err)
	res, err := (&session.Locker{Store: s}).Acquire(key, []byte("w"), time.Minute, 50*time.Millisecond)
	require.NoError(t, err)
	assert.False(t, res.Acquired)
	assert.Equal(t, 0, lineLength(t, s, key), "it left")
}
