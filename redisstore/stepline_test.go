package redisstore

import (
	"strconv"
	"sync"
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

// everyAcquire is an acquiring Step of each action, fenced or not, with its
// key colocated with lock (one slot).
func everyAcquire(lock, key string) []backend.Step {
	var steps []backend.Step
	for _, a := range []backend.Action{backend.ActionNone, backend.ActionGet, backend.ActionSet, backend.ActionDel, backend.ActionExpire} {
		for _, fenced := range []bool{false, true} {
			steps = append(steps, backend.Step{Lock: lock, Token: []byte("tok"), LockTTL: time.Minute, Acquire: true,
				Fenced: fenced, Action: a, Key: key, Value: []byte("new"), TTL: time.Hour, Dst: make([]byte, 16)})
		}
	}
	return steps
}

// stepOutputs is what a Step answered, but the fence, which differs by
// grant: whether there is one.
type stepOutputs struct {
	Outcome                 contract.SetNXOutcome
	Held, Done, Found, Rel  bool
	N                       int
	Fenced                  bool
	Read                    string
	Value                   string
	ValueFound, ValueHasTTL bool
}

func outputs(t *testing.T, s *Store, st *backend.Step) stepOutputs {
	v, found, err := get(t, s, st.Key)
	require.NoError(t, err)
	ttl, _, err := s.PTTL(st.Key)
	require.NoError(t, err)
	o := stepOutputs{Outcome: st.Outcome, Held: st.Held, Done: st.Done, Found: st.Found, Rel: st.Released, N: st.N,
		Fenced: st.Fence > 0, Value: string(v), ValueFound: found, ValueHasTTL: ttl > 0}
	if st.N <= len(st.Dst) {
		o.Read = string(st.Dst[:st.N])
	}
	return o
}

// An acquiring Step in line answers exactly as the Step does outside it,
// every action, fenced or not: on a free lock with nobody in line it is the
// Step; on a held lock it is refused as the Step is (nothing done, the key
// untouched) and the waiter keeps a place in line, or none with a lease of
// 0; once a release hands it the lock, its next attempt claims it and
// does the whole step.
func TestAStepInLineAnswersAsTheStep(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	const lease = 30 * time.Second // a handed lock is claimed within it, however slow the host
	for i, proto := range everyAcquire("", "") {
		name := "step" + strconv.Itoa(i)
		t.Run(name, func(t *testing.T) {
			var got [2]stepOutputs
			for j, inLine := range []bool{false, true} {
				lock := sessionkeys.LockKey(name + strconv.FormatBool(inLine))
				key := sessionkeys.DataKey(name + strconv.FormatBool(inLine))
				require.NoError(t, s.Set(key, []byte("old"), 0))
				st := proto
				st.Lock, st.Key, st.Dst = lock, key, make([]byte, 16)
				if inLine {
					require.NoError(t, s.StepInLine(&st, "w", time.Minute))
				} else {
					require.NoError(t, s.Step(&st))
				}
				got[j] = outputs(t, s, &st)
				assert.Zero(t, lineLength(t, s, lock), "nobody in line")
			}
			assert.Equal(t, got[0], got[1], "in line as outside it, on a free lock")
			assert.Equal(t, contract.Inserted, got[1].Outcome)

			s2 := s
			lock, key := sessionkeys.LockKey(name), sessionkeys.DataKey(name)
			_, err := s2.SetNX(lock, []byte("holder"), time.Minute)
			require.NoError(t, err)
			require.NoError(t, s2.Set(key, []byte("old"), 0))
			st := proto
			st.Lock, st.Key, st.Dst = lock, key, make([]byte, 16)
			require.NoError(t, s2.Step(&st))
			outside := outputs(t, s2, &st)
			assert.Equal(t, contract.Exists, outside.Outcome)
			st.Dst = make([]byte, 16)
			require.NoError(t, s2.StepInLine(&st, "nolease", 0))
			assert.Equal(t, outside, outputs(t, s2, &st), "refused in line as outside it")
			assert.Zero(t, lineLength(t, s2, lock), "a lease of 0: no place")
			require.NoError(t, s2.StepInLine(&st, "w", lease))
			assert.Equal(t, outside, outputs(t, s2, &st), "refused in line as outside it")
			assert.Equal(t, 1, lineLength(t, s2, lock), "in line")

			released, err := s2.DelIfEq(lock, []byte("holder"))
			require.NoError(t, err)
			require.True(t, released)
			require.NoError(t, s2.StepInLine(&st, "w", lease))
			claimed := outputs(t, s2, &st)
			assert.Equal(t, got[0], claimed, "the claim of a handed lock is the whole step")
			ttl, _, err := s2.PTTL(lock)
			require.NoError(t, err)
			assert.Greater(t, ttl, lease, "claimed: the real TTL")
		})
	}
}

// A step that does not acquire has no turn to wait for: refused.
func TestAStepInLineAcquires(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	st := backend.Step{Lock: "l", Token: []byte("t"), Guard: backend.GuardToken, Action: backend.ActionSet, Key: "k", Value: []byte("v")}
	assert.ErrorIs(t, s.StepInLine(&st, "w", time.Minute), contract.ErrInvalidArgument)
	_, found, err := get(t, s, "k")
	require.NoError(t, err)
	assert.False(t, found)
}

// A newcomer never overtakes a waiter in line, whatever its step does: on a
// free lock whose line holds a live waiter, an acquiring step with a write,
// a removal or an expiry is refused with nothing done, and waits behind.
func TestAStepInLineDoesNotOvertake(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	lock, key := sessionkeys.LockKey("overtake"), sessionkeys.DataKey("overtake")
	require.NoError(t, s.Set(key, []byte("old"), 0))
	_, err := s.SetNX(lock, []byte("holder"), time.Minute)
	require.NoError(t, err)
	first := backend.Step{Lock: lock, Token: []byte("first"), LockTTL: time.Minute, Acquire: true}
	require.NoError(t, s.StepInLine(&first, "first", time.Minute))
	require.Equal(t, contract.Exists, first.Outcome)
	// The lock is freed without a hand-over (it expired, say): its line
	// still holds the first waiter.
	_, err = s.c.Del(ctx, testKey(lock)).Result()
	require.NoError(t, err)
	for _, st := range everyAcquire(lock, key) {
		st.Token = []byte("late")
		require.NoError(t, s.StepInLine(&st, "late", time.Minute))
		assert.Equal(t, contract.Exists, st.Outcome, "action %d: not its turn", st.Action)
		assert.False(t, st.Held || st.Done || st.Found)
		v, _, err := get(t, s, key)
		require.NoError(t, err)
		assert.Equal(t, "old", string(v), "action %d: nothing done", st.Action)
		ttl, _, err := s.PTTL(key)
		require.NoError(t, err)
		assert.Equal(t, time.Duration(-1), ttl, "action %d: no TTL given", st.Action)
	}
	assert.Equal(t, 2, lineLength(t, s, lock), "the late one waits behind")
	require.NoError(t, s.StepInLine(&first, "first", time.Minute))
	assert.Equal(t, contract.Inserted, first.Outcome, "the first one's turn")
}

// Acquiring steps that write, remove or expire a key wait in line beside
// plain and fenced acquisitions, across processes (each a Store of its
// own), and are served in the order they came: each waiter starts once the
// one before it is in line, and all are released at once by the holder's
// release. Each waiter's step is done in its turn, and nobody is woken out
// of turn (two attempts, and one per LineStep waited).
func TestEveryAcquiringStepIsServedInArrivalOrder(t *testing.T) {
	srv := redistest.Start(t)
	kinds := []string{"set", "acquire", "del", "expire", "getfenced", "set", "del", "expire"}
	n := len(kinds)
	stores := make([]*Store, n+1)
	for i := range stores {
		stores[i] = open(t, "redis://"+srv.Addr)
	}
	name := "steporder"
	lock := sessionkeys.LockKey(name)
	out, err := stores[0].SetNX(lock, []byte("holder"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	data := func(i int) string { return sessionkeys.DataKey(name + strconv.Itoa(i)) } // the lock's slot
	for i := 1; i <= n; i++ {
		require.NoError(t, stores[0].Set(data(i), []byte("old"), 0))
	}

	var mu sync.Mutex
	var got []int
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := stores[i]
			l := &lockwait.Locker{Store: s}
			tok := []byte("w" + strconv.Itoa(i))
			st := backend.Step{Lock: lock, Token: tok, LockTTL: time.Minute, Acquire: true, Key: data(i), Dst: make([]byte, 8)}
			switch kinds[i-1] {
			case "set":
				st.Action, st.Value = backend.ActionSet, []byte("new")
			case "del":
				st.Action = backend.ActionDel
			case "expire":
				st.Action, st.TTL = backend.ActionExpire, time.Hour
			case "getfenced":
				st.Action, st.Fenced = backend.ActionGet, true
			}
			start := time.Now()
			res, err := l.AcquireStep(s, &st, hangCatch)
			if !assert.NoError(t, err) || !assert.True(t, res.Acquired, "waiter %d", i) {
				return
			}
			assert.LessOrEqual(t, res.Attempts, 2+int(time.Since(start)/lockwait.LineStep), "waiter %d", i)
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
			v, found, err := get(t, s, data(i))
			assert.NoError(t, err)
			ttl, _, err := s.PTTL(data(i))
			assert.NoError(t, err)
			switch kinds[i-1] {
			case "set":
				assert.True(t, st.Done)
				assert.Equal(t, "new", string(v), "waiter %d wrote in its turn", i)
			case "del":
				assert.True(t, st.Done)
				assert.False(t, found, "waiter %d removed in its turn", i)
			case "expire":
				assert.True(t, st.Done)
				assert.Greater(t, ttl, time.Duration(0), "waiter %d expired in its turn", i)
			case "getfenced":
				assert.True(t, st.Found)
				assert.Equal(t, "old", string(st.Dst[:st.N]))
				assert.Positive(t, st.Fence)
			}
			released, err := s.DelIfEq(lock, tok)
			assert.NoError(t, err)
			assert.True(t, released)
		}(i)
		require.Eventually(t, func() bool { return lineLength(t, stores[0], lock) == i }, hangCatch, time.Millisecond,
			"waiter %d (%s) in line", i, kinds[i-1])
	}
	released, err := stores[0].DelIfEq(lock, []byte("holder"))
	require.NoError(t, err)
	require.True(t, released)
	wg.Wait()
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	assert.Equal(t, want, got)
	assert.Equal(t, 0, lineLength(t, stores[0], lock), "nobody left in line")
}

// In its turn, a waiter whose step writes is refused by a full server as
// the Step is (contract.ErrNoMemory) with nothing changed: the write is the
// attempt's first, before the line's, so the server refuses it there, and
// the lock handed to the waiter is not claimed. A Locker giving up on the
// error leaves the line at once, handing the lock on.
func TestAFullServerRefusesAStepsWriteInItsTurn(t *testing.T) {
	srv, s, lock := heldLock(t, "fullstep")
	key := sessionkeys.DataKey("fullstep")
	require.NoError(t, s.Set(key, []byte("old"), 0))
	write := backend.Step{Token: []byte("w"), LockTTL: time.Minute, Acquire: true,
		Action: backend.ActionSet, Key: key, Value: make([]byte, 64<<10)}
	const lease = time.Minute // places last through the test, however slow the host
	st := write
	st.Lock = lock
	require.NoError(t, s.StepInLine(&st, "w", lease))
	require.Equal(t, contract.Exists, st.Outcome, "in line")
	next := backend.Step{Lock: lock, Token: []byte("next"), LockTTL: time.Minute, Acquire: true}
	require.NoError(t, s.StepInLine(&next, "next", lease))

	// The same through a Locker, on a lock of the same slot.
	lock2 := sessionkeys.LockKey("fullstep") + "2"
	_, err := s.SetNX(lock2, []byte("holder"), time.Minute)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		st := write
		st.Lock = lock2
		res, err := (&lockwait.Locker{Store: s}).AcquireStep(s, &st, hangCatch)
		assert.False(t, res.Acquired)
		done <- err
	}()
	require.Eventually(t, func() bool { return lineLength(t, s, lock2) == 1 }, hangCatch, time.Millisecond)
	next.Lock = lock2
	require.NoError(t, s.StepInLine(&next, "next", lease))
	fill(t, admin(t, srv.Addr))

	released, err := s.DelIfEq(lock, []byte("holder"))
	require.NoError(t, err)
	require.True(t, released)
	v, _, err := get(t, s, lock)
	require.NoError(t, err)
	require.Equal(t, "w", string(v), "handed to the waiter on the full server")
	err = s.StepInLine(&st, "w", lease)
	require.ErrorIs(t, err, contract.ErrNoMemory)
	v, _, err = get(t, s, key)
	require.NoError(t, err)
	assert.Equal(t, "old", string(v), "nothing written")
	ttl, _, err := s.PTTL(lock)
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, lease, "not claimed: the lock lasts the lease it was handed with")
	require.NoError(t, s.LeaveLine(lock, "w"))
	v, _, err = get(t, s, lock)
	require.NoError(t, err)
	assert.Equal(t, "next", string(v), "the waiter left: handed on")

	released, err = s.DelIfEq(lock2, []byte("holder"))
	require.NoError(t, err)
	require.True(t, released)
	select {
	case err := <-done:
		require.ErrorIs(t, err, contract.ErrNoMemory)
	case <-time.After(hangCatch):
		t.Fatal("the Locker's waiter was not refused in its turn")
	}
	v, _, err = get(t, s, lock2)
	require.NoError(t, err)
	assert.Equal(t, "next", string(v), "the Locker left the line: handed on")
	v, _, err = get(t, s, key)
	require.NoError(t, err)
	assert.Equal(t, "old", string(v), "nothing written")
}
