package redisstore

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/lockwait"
	"github.com/ephpm/ephpm/sessionkeys"
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

// setNXInLine is the attempt of Locker.Acquire in line: a Step that only
// takes its lock, for waiter id with a lease of lease.
func setNXInLine(s *Store, key string, token []byte, ttl time.Duration, id string, lease time.Duration) (contract.SetNXOutcome, error) {
	st := backend.Step{Lock: key, Token: token, LockTTL: ttl, Acquire: true}
	err := s.StepInLine(&st, id, lease)
	return st.Outcome, err
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
// both. Each waiter makes two attempts: nobody is woken out of turn.
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
	key := sessionkeys.LockKey("order")
	out, err := stores[0].SetNX(key, []byte("holder"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)

	var mu sync.Mutex
	var got []int
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l := &lockwait.Locker{Store: stores[i]}
			tok := []byte("w" + strconv.Itoa(i))
			var res lockwait.Result
			var fence int64
			var err error
			start := time.Now()
			if i%2 == 0 {
				res, _, fence, err = l.AcquireGetFenced(stores[i], key, tok, time.Minute, hangCatch,
					sessionkeys.DataKey("order"), nil)
			} else {
				res, err = l.Acquire(key, tok, time.Minute, hangCatch)
			}
			if !assert.NoError(t, err) || !assert.True(t, res.Acquired) {
				return
			}
			// The attempt that put it in line, and the claim its turn's
			// wake led to: a release wakes the head alone, on every server.
			// A waiter in line also tries once per LineStep it waits, to
			// renew its place (a slow host's long wait).
			assert.LessOrEqual(t, res.Attempts, 2+int(time.Since(start)/lockwait.LineStep), "waiter %d", i)
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
			var released bool
			if i%2 == 0 {
				assert.Positive(t, fence)
				released, err = backend.SetFencedRelease(stores[i], sessionkeys.DataKey("order"), tok, time.Minute, key, fence, tok)
			} else {
				released, err = stores[i].DelIfEq(key, tok)
			}
			assert.NoError(t, err)
			assert.True(t, released)
		}(i)
		require.Eventually(t, func() bool { return lineLength(t, stores[0], key) == i }, hangCatch, time.Millisecond,
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
	key := sessionkeys.LockKey("dead")
	_, err = s.SetNX(key, []byte("holder"), time.Minute)
	require.NoError(t, err)
	const lease = 300 * time.Millisecond
	leased := time.Now() // before the lease starts
	out, err := setNXInLine(s, key, []byte("dead"), time.Minute, "deadwaiter", lease)
	require.NoError(t, err)
	require.Equal(t, contract.Exists, out, "in line")
	done := make(chan time.Duration)
	go func() {
		l := &lockwait.Locker{Store: s}
		res, err := l.Acquire(key, []byte("next"), time.Minute, 5*hangCatch)
		assert.NoError(t, err)
		assert.True(t, res.Acquired)
		done <- time.Since(leased)
	}()
	require.Eventually(t, func() bool { return lineLength(t, s, key) == 2 }, hangCatch, time.Millisecond)
	released, err := s.DelIfEq(key, []byte("holder"))
	require.NoError(t, err)
	require.True(t, released)
	took := <-done
	// Not before the dead waiter's lease lapsed (timed from before it
	// began), and well within the wait (a hang catch, not a speed bound).
	assert.Greater(t, took, lease/2, "the dead waiter kept its place while its lease was live")
	assert.Less(t, took, hangCatch)
	t.Logf("the next waiter had the lock after %v (lease %v)", took.Round(time.Millisecond), lease)
}

// A waiter that runs out of time leaves the line at once, and the next in
// line is told if the lock is free.
func TestAWaiterOutOfTimeLeavesTheLine(t *testing.T) {
	srv := redistest.Start(t)
	s, err := Open("redis://"+srv.Addr, testOptions)
	require.NoError(t, err)
	defer s.Close()
	key := sessionkeys.LockKey("leave")
	_, err = s.SetNX(key, []byte("holder"), time.Minute)
	require.NoError(t, err)
	res, err := (&lockwait.Locker{Store: s}).Acquire(key, []byte("w"), time.Minute, 50*time.Millisecond)
	require.NoError(t, err)
	assert.False(t, res.Acquired)
	assert.Equal(t, 0, lineLength(t, s, key), "it left")
}

// heldLock starts a server and holds the lock of session name there with
// the token "holder", for a minute.
func heldLock(t *testing.T, name string) (*redistest.Server, *Store, string) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	key := sessionkeys.LockKey(name)
	out, err := s.SetNX(key, []byte("holder"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	return srv, s, key
}

// get is key's value in s, and whether it has one.
func get(t *testing.T, s *Store, key string) ([]byte, bool, error) {
	dst := make([]byte, 256)
	n, found, err := s.GetInto(key, dst)
	require.LessOrEqual(t, n, len(dst))
	return dst[:n], found, err
}

// A release hands a lined lock to the first waiter in line, in the same
// script: the lock holds the waiter's token for its lease, and the waiter's
// next attempt claims it with its real TTL and reads the data. Every
// release of a lined lock does, on every server: DelIfEq (on a server with
// a native compare-and-delete too), the guarded write's release, Del.
func TestAReleaseHandsTheLockToTheHead(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	const lease = 30 * time.Second // the head claims within it, however slow the host
	for _, release := range []struct {
		name string
		do   func(key string) (bool, error)
	}{
		{"DelIfEq", func(key string) (bool, error) { return s.DelIfEq(key, []byte("holder")) }},
		{"SetGuardedRelease", func(key string) (bool, error) {
			return backend.SetGuardedRelease(s, sessionkeys.DataKey("handon"), []byte("data"), time.Minute, key, []byte("holder"))
		}},
		{"Del", func(key string) (bool, error) { return s.Del(key) }},
	} {
		t.Run(release.name, func(t *testing.T) {
			key := sessionkeys.LockKey("handon")
			require.NoError(t, s.Set(sessionkeys.DataKey("handon"), []byte("data"), time.Minute))
			out, err := s.SetNX(key, []byte("holder"), time.Minute)
			require.NoError(t, err)
			require.Equal(t, contract.Inserted, out)
			out, err = setNXInLine(s, key, []byte("head"), time.Minute, "headid", lease)
			require.NoError(t, err)
			require.Equal(t, contract.Exists, out, "in line")
			out, err = setNXInLine(s, key, []byte("second"), time.Minute, "secondid", lease)
			require.NoError(t, err)
			require.Equal(t, contract.Exists, out, "in line")

			released, err := release.do(key)
			require.NoError(t, err)
			require.True(t, released)
			v, found, err := get(t, s, key)
			require.NoError(t, err)
			require.True(t, found, "the lock was handed on, not freed")
			assert.Equal(t, "head", string(v))
			ttl, _, err := s.PTTL(key)
			require.NoError(t, err)
			assert.LessOrEqual(t, ttl, lease, "a handed lock lasts the head's lease until claimed")
			assert.Equal(t, 1, lineLength(t, s, key), "the head left the line")

			turn, err := s.WaitTurn(key, "secondid", 10*time.Millisecond)
			require.NoError(t, err)
			assert.False(t, turn, "not the second's turn")
			turn, err = s.WaitTurn(key, "headid", hangCatch)
			require.NoError(t, err)
			assert.True(t, turn, "the head's look sees the lock is its")

			st := backend.Step{Lock: key, Token: []byte("head"), LockTTL: time.Minute, Acquire: true,
				Action: backend.ActionGet, Key: sessionkeys.DataKey("handon"), Dst: make([]byte, 64)}
			require.NoError(t, s.StepInLine(&st, "headid", lease))
			require.Equal(t, contract.Inserted, st.Outcome, "the head claims the lock handed to it")
			assert.True(t, st.Found)
			assert.Equal(t, "data", string(st.Dst[:st.N]))
			ttl, _, err = s.PTTL(key)
			require.NoError(t, err)
			assert.Greater(t, ttl, lease, "claimed: the real TTL")

			// The second leaves: nothing is handed to it any more.
			require.NoError(t, s.LeaveLine(key, "secondid"))
			released, err = s.DelIfEq(key, []byte("head"))
			require.NoError(t, err)
			require.True(t, released)
			_, found, err = get(t, s, key)
			require.NoError(t, err)
			assert.False(t, found, "nobody in line: the release frees the lock")
			assert.Equal(t, 0, lineLength(t, s, key))
		})
	}
}

// A waiter that gives up after a release handed it the lock hands it on
// (or frees it): LeaveLine never keeps a lock it was handed.
func TestAWaiterLeavingHandsOnALockHandedToIt(t *testing.T) {
	_, s, key := heldLock(t, "leavehanded")
	for _, w := range []string{"a", "b"} {
		out, err := setNXInLine(s, key, []byte("tok"+w), time.Minute, w, time.Minute)
		require.NoError(t, err)
		require.Equal(t, contract.Exists, out)
	}
	released, err := s.DelIfEq(key, []byte("holder"))
	require.NoError(t, err)
	require.True(t, released)
	require.NoError(t, s.LeaveLine(key, "a"))
	v, _, err := get(t, s, key)
	require.NoError(t, err)
	assert.Equal(t, "tokb", string(v), "a left: handed on to b")
	require.NoError(t, s.LeaveLine(key, "b"))
	_, found, err := get(t, s, key)
	require.NoError(t, err)
	assert.False(t, found, "b left too: free")
}

// handOffChild, in a child process (the test binary run again), waits in
// line for the lock HANDOFF_KEY with token HANDOFF_TOKEN until killed.
func TestHandOffChild(t *testing.T) {
	addr, key := os.Getenv("HANDOFF_ADDR"), os.Getenv("HANDOFF_KEY")
	if addr == "" {
		t.Skip("the child of TestAWaiterKilledAtTheHandOffHoldsUpTheLineForItsLeaseOnly")
	}
	s := open(t, "redis://"+addr)
	(&lockwait.Locker{Store: s}).Acquire(key, []byte(os.Getenv("HANDOFF_TOKEN")), time.Minute, time.Minute)
	t.Fatal("the child got the lock or gave up: it was to be killed while waiting")
}

// A waiter whose process is killed just before the release that hands it
// the lock (it waits in line, its lease live) holds the lock for what is
// left of its lease at most, not for the lock's TTL (a minute here): the
// next waiter then has it.
func TestAWaiterKilledAtTheHandOffHoldsUpTheLineForItsLeaseOnly(t *testing.T) {
	srv, s, key := heldLock(t, "killed")

	child := exec.Command(os.Args[0], "-test.run", "^TestHandOffChild$")
	child.Env = append(os.Environ(), "HANDOFF_ADDR="+srv.Addr, "HANDOFF_KEY="+key, "HANDOFF_TOKEN=dead")
	require.NoError(t, child.Start())
	defer child.Process.Kill()
	require.Eventually(t, func() bool { return lineLength(t, s, key) == 1 }, hangCatch, time.Millisecond,
		"the child in line")

	next := open(t, "redis://"+srv.Addr)
	done := make(chan time.Time, 1)
	go func() {
		res, err := (&lockwait.Locker{Store: next}).Acquire(key, []byte("next"), time.Minute, 5*hangCatch)
		assert.NoError(t, err)
		assert.True(t, res.Acquired)
		done <- time.Now()
	}()
	require.Eventually(t, func() bool { return lineLength(t, s, key) == 2 }, hangCatch, time.Millisecond,
		"the next waiter in line behind the child")

	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	child.Wait()
	// What is left of the child's lease, renewed until the kill: the release
	// hands it the lock while it lives (asserted unless the host took longer
	// than that to release; then the lease may have lapsed).
	line, leases, _ := queueKeys(testKey(key))
	ids, err := s.c.ZRange(ctx, line, 0, 0).Result()
	require.NoError(t, err)
	require.Len(t, ids, 1)
	left, err := s.c.PTTL(ctx, leases+ids[0]).Result()
	require.NoError(t, err)
	start := time.Now()
	released, err := s.DelIfEq(key, []byte("holder"))
	require.NoError(t, err)
	require.True(t, released)
	v, _, err := get(t, s, key)
	require.NoError(t, err)
	if time.Since(start) < left {
		require.Equal(t, "dead", string(v), "the release handed the lock to the killed waiter, its lease still live")
	}

	took := (<-done).Sub(start)
	lease := lockwait.LineStep + lockwait.LeaseMargin
	assert.Less(t, took, time.Minute/2,
		"held up for the dead waiter's lease (and the next one's wait), not the lock's minute")
	t.Logf("the next waiter had the lock %v after the hand-off to the killed one (lease %v)",
		took.Round(time.Millisecond), lease)
}

// waitTurn runs WaitTurn for waiter id of key in the background, sending
// what it answers on woke.
func waitTurn(t *testing.T, s *Store, key, id string, woke chan<- bool) {
	go func() {
		turn, err := s.WaitTurn(key, id, 5*hangCatch)
		assert.NoError(t, err)
		woke <- turn
	}()
}

// turned waits up to hangCatch for waitTurn's answer, which must be true
// (failing with why otherwise).
func turned(t *testing.T, woke <-chan bool, why string) {
	select {
	case turn := <-woke:
		assert.True(t, turn, "told it is its turn")
	case <-time.After(hangCatch):
		t.Fatal(why)
	}
}

// On a standalone server a waiter in line waits on a subscriber connection
// of its own (turnwait.go), not through the hub; the connection is kept
// for the next wait, which a message for the channel of the wait before
// does not wake, and a kept connection the server closed is replaced.
func TestAWaiterInLineWaitsOnASubscriberConnection(t *testing.T) {
	srv, s, key := heldLock(t, "subscriber")
	require.NotNil(t, s.direct, "a standalone server: the direct path")
	ch := releaseChannel(testKey(key))
	numSub := func(ch string) int64 {
		n, err := s.c.PubSubNumSub(ctx, ch).Result()
		require.NoError(t, err)
		return n[ch]
	}

	out, err := setNXInLine(s, key, []byte("w"), time.Minute, "w", time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Exists, out)
	woke := make(chan bool, 1)
	waitTurn(t, s, key, "w", woke)
	require.Eventually(t, func() bool { return numSub(ch) == 1 }, hangCatch, time.Millisecond)
	released, err := s.DelIfEq(key, []byte("holder"))
	require.NoError(t, err)
	require.True(t, released)
	turned(t, woke, "not woken by the release")
	s.hub.mu.Lock()
	assert.Nil(t, s.hub.ps, "the hub never subscribed")
	s.hub.mu.Unlock()
	require.Eventually(t, func() bool { return numSub(ch) == 0 }, hangCatch, time.Millisecond, "unsubscribed")
	s.direct.mu.Lock()
	assert.Len(t, s.direct.subs, 1, "the connection is kept")
	s.direct.mu.Unlock()

	// The next wait, on another lock, on the kept connection: a message on
	// the first channel does not wake it; a release of its own does.
	other := sessionkeys.LockKey("subscriber2")
	_, err = s.SetNX(other, []byte("holder"), time.Minute)
	require.NoError(t, err)
	waitTurn(t, s, other, "w2", woke)
	otherCh := releaseChannel(testKey(other))
	require.Eventually(t, func() bool { return numSub(otherCh) == 1 }, hangCatch, time.Millisecond)
	require.NoError(t, s.c.Publish(ctx, ch, "w2").Err())
	select {
	case <-woke:
		t.Fatal("woken by another channel's message")
	case <-time.After(100 * time.Millisecond):
	}
	_, err = s.Del(other)
	require.NoError(t, err)
	turned(t, woke, "not woken by the release")

	// The server closes the kept connection; the next wait dials anew.
	require.Eventually(t, func() bool { return numSub(otherCh) == 0 }, hangCatch, time.Millisecond)
	// Subscribed to nothing, it is a normal client to the server: every
	// normal connection goes (the command connections are dialed anew).
	killed, err := exec.Command(redistest.CLIBinary(), "-p", strconv.Itoa(srv.Port),
		"client", "kill", "type", "normal").Output()
	require.NoError(t, err, "%s", killed)
	require.NotEqual(t, "0", strings.TrimSpace(string(killed)))
	_, err = s.SetNX(other, []byte("holder"), time.Minute)
	require.NoError(t, err)
	waitTurn(t, s, other, "w3", woke)
	require.Eventually(t, func() bool { return numSub(otherCh) == 1 }, hangCatch, time.Millisecond)
	_, err = s.Del(other)
	require.NoError(t, err)
	turned(t, woke, "not woken after the server closed the kept connection")

	// A wait that times out before any message keeps the connection too.
	require.Eventually(t, func() bool { return numSub(otherCh) == 0 }, hangCatch, time.Millisecond)
	s.direct.mu.Lock()
	kept := s.direct.subs[0]
	s.direct.mu.Unlock()
	_, err = s.SetNX(other, []byte("holder"), time.Minute)
	require.NoError(t, err)
	turn, err := s.WaitTurn(other, "w4", 50*time.Millisecond)
	require.NoError(t, err)
	assert.False(t, turn, "timed out")
	s.direct.mu.Lock()
	assert.Equal(t, []*wireConn{kept}, s.direct.subs, "the same connection, kept")
	s.direct.mu.Unlock()
}

// A fenced waiter handed the lock by a fenced release mints its fence when
// it claims it, above the releasing holder's: the hand-off is a grant like
// any other in the name's sequence of fences.
func TestAFencedWaiterHandedTheLockMintsItsFenceAtTheClaim(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	key, data := sessionkeys.LockKey("fencedhandoff"), sessionkeys.DataKey("fencedhandoff")
	out, _, _, first, err := backend.SetNXGetFenced(s, key, []byte("holder"), time.Minute, data, nil)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	// A lease of 30 s: the claim below comes within it, however slow the host.
	st := backend.Step{Lock: key, Token: []byte("next"), LockTTL: time.Minute, Acquire: true, Fenced: true,
		Action: backend.ActionGet, Key: data, Dst: make([]byte, 16)}
	require.NoError(t, s.StepInLine(&st, "nextid", 30*time.Second))
	require.Equal(t, contract.Exists, st.Outcome, "in line")

	written, err := backend.SetFencedRelease(s, data, []byte("v"), time.Minute, key, first, []byte("holder"))
	require.NoError(t, err)
	require.True(t, written)
	v, _, err := get(t, s, key)
	require.NoError(t, err)
	assert.Equal(t, "next", string(v), "the fenced release handed the lock on")
	written, err = backend.SetFencedRelease(s, data, []byte("late"), time.Minute, key, first, []byte("holder"))
	require.NoError(t, err)
	assert.False(t, written, "the lock is the next one's: the old holder's fenced write is refused")

	require.NoError(t, s.StepInLine(&st, "nextid", 30*time.Second))
	require.Equal(t, contract.Inserted, st.Outcome, "claimed")
	assert.True(t, st.Found)
	assert.Equal(t, "v", string(st.Dst[:st.N]))
	assert.Greater(t, st.Fence, first, "the claim minted a fence above the last grant's")
	ttl, _, err := s.PTTL(key)
	require.NoError(t, err)
	assert.Greater(t, ttl, 30*time.Second, "claimed: the real TTL")
}

// An acquisition that will not wait (a wait of 0), refused, takes no place
// in line: one attempt, no lease, nothing to leave. For a session-style
// lock and a read/write lock alike.
func TestARefusedAttemptThatWillNotWaitTakesNoPlaceInLine(t *testing.T) {
	srv, s, key := heldLock(t, "nowait")
	l := &lockwait.Locker{Store: s}
	for _, tc := range []struct {
		name string
		try  func() (lockwait.Result, error)
	}{
		{"Acquire", func() (lockwait.Result, error) { return l.Acquire(key, []byte("w"), time.Minute, 0) }},
		{"AcquireLock", func() (lockwait.Result, error) {
			res, _, err := l.AcquireLock(s, key, []byte("r"), contract.LockShared, time.Minute, 0)
			return res, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.try() // the server loads the scripts
			before := calls(t, srv.Addr)
			res, err := tc.try()
			require.NoError(t, err)
			assert.False(t, res.Acquired)
			assert.Equal(t, 1, res.Attempts)
			after := calls(t, srv.Addr)
			assert.Equal(t, int64(1), after["evalsha"]-before["evalsha"], "one script: the attempt, no leave")
			assert.Zero(t, after["zadd"]-before["zadd"], "no place taken in line")
			assert.Equal(t, 0, lineLength(t, s, key))
		})
	}
}

// A hand-over names the head on the head's own channel and on the one
// Wait's waiters listen on besides (releaseChannel), never on the channel
// every waiter in line listens on: one publish there woke every waiting
// thread of every process at each hand-over. Redis delivers one
// subscriber's messages in order, so a message published after the
// release, read first, says the release published nothing there.
func TestAHandOverWakesOnlyTheHead(t *testing.T) {
	_, s, key := heldLock(t, "wakesonlythehead")
	ch := releaseChannel(testKey(key))
	numSub := func(ch string) int64 {
		n, err := s.c.PubSubNumSub(ctx, ch).Result()
		require.NoError(t, err)
		return n[ch]
	}
	ps := s.c.Subscribe(ctx, ch, namedChannel(ch))
	defer ps.Close()
	_, err := ps.Receive(ctx) // the first confirmation
	require.NoError(t, err)
	_, err = ps.Receive(ctx)
	require.NoError(t, err)

	woke := map[string]chan bool{"a": make(chan bool, 1), "b": make(chan bool, 1)}
	for _, id := range []string{"a", "b"} {
		out, err := setNXInLine(s, key, []byte(id), time.Minute, id, time.Minute) // places kept, however slow the host
		require.NoError(t, err)
		require.Equal(t, contract.Exists, out, "in line")
		waitTurn(t, s, key, id, woke[id])
		require.Eventually(t, func() bool { return numSub(headChannel(ch, id)) == 1 }, hangCatch, time.Millisecond)
	}
	require.EqualValues(t, 3, numSub(ch), "both waiters and the test listen on the release channel")

	released, err := s.DelIfEq(key, []byte("holder"))
	require.NoError(t, err)
	require.True(t, released)
	turned(t, woke["a"], "the head was not woken")
	require.NoError(t, s.c.Publish(ctx, ch, "after").Err())
	got := map[string][]string{}
	for len(got[ch]) == 0 {
		m, err := ps.ReceiveMessage(ctx)
		require.NoError(t, err)
		got[m.Channel] = append(got[m.Channel], m.Payload)
	}
	assert.Equal(t, []string{"after"}, got[ch], "the hand-over published nothing on the release channel")
	assert.Equal(t, []string{"a"}, got[namedChannel(ch)], "Wait's waiters hear the hand-over")
	assert.EqualValues(t, 1, numSub(headChannel(ch, "b")), "the second still waits")

	released, err = s.DelIfEq(key, []byte("a"))
	require.NoError(t, err)
	require.True(t, released)
	turned(t, woke["b"], "the second was not woken by the head's release")
}
