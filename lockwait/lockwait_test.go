package lockwait

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/memstore"
	"github.com/ephpm/ephpm/sessionkeys"
)

func TestBackoffSchedule(t *testing.T) {
	var got []time.Duration
	step := DefaultBackoff.Initial
	for i := 0; i < 7; i++ {
		got = append(got, step)
		step = DefaultBackoff.Next(step)
	}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 100 * ms, 100 * ms, 100 * ms}, got)
}

// fakeClock advances only when something sleeps on it, or when the test
// says (to model time spent inside store calls).
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// scripted is a Store whose SetNX answers from a script and can cost time.
type scripted struct {
	clock   *fakeClock
	cost    time.Duration // clock time each SetNX takes
	answers []contract.SetNXOutcome
	err     error
	calls   int
}

func (s *scripted) SetNX(string, []byte, time.Duration) (contract.SetNXOutcome, error) {
	s.calls++
	s.clock.advance(s.cost)
	if s.err != nil {
		return 0, s.err
	}
	if s.calls <= len(s.answers) {
		return s.answers[s.calls-1], nil
	}
	return contract.Exists, nil
}

func TestAcquireFirstTry(t *testing.T) {
	clk := &fakeClock{}
	st := &scripted{clock: clk, answers: []contract.SetNXOutcome{contract.Inserted}}
	res, err := (&Locker{Store: st, Clock: clk}).Acquire("l", []byte("t"), time.Second, time.Second)
	require.NoError(t, err)
	assert.Equal(t, Result{Acquired: true, Attempts: 1}, res)
	assert.Empty(t, clk.sleeps)
}

func TestAcquireBacksOffUntilItWins(t *testing.T) {
	clk := &fakeClock{}
	st := &scripted{clock: clk, answers: []contract.SetNXOutcome{contract.Exists, contract.Exists, contract.Exists, contract.Inserted}}
	start := clk.Now()
	res, err := (&Locker{Store: st, Clock: clk}).Acquire("l", []byte("t"), time.Second, time.Second)
	require.NoError(t, err)
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{10 * ms, 20 * ms, 40 * ms}, clk.sleeps)
	assert.Equal(t, Result{Acquired: true, Attempts: 4}, res)
	assert.Equal(t, 70*ms, clk.Now().Sub(start))
}

func TestAcquireBudgetIsWallClockNotSummedSleeps(t *testing.T) {
	// Each SetNX costs 30 ms (a slow backend): a budget of 200 ms must end
	// after 200 ms of clock time, although the sleeps alone sum to less.
	clk := &fakeClock{}
	st := &scripted{clock: clk, cost: 30 * time.Millisecond}
	start := clk.Now()
	res, err := (&Locker{Store: st, Clock: clk}).Acquire("l", []byte("t"), time.Second, 200*time.Millisecond)
	waited := clk.Now().Sub(start)
	require.NoError(t, err)
	assert.False(t, res.Acquired)
	var slept time.Duration
	for _, d := range clk.sleeps {
		slept += d
	}
	assert.Less(t, slept, 200*time.Millisecond)
	assert.GreaterOrEqual(t, waited, 200*time.Millisecond)
	assert.Less(t, waited, 200*time.Millisecond+st.cost+1, "no wait beyond the budget")
}

func TestAcquireNeverSleepsPastTheBudget(t *testing.T) {
	clk := &fakeClock{}
	st := &scripted{clock: clk}
	start := clk.Now()
	res, err := (&Locker{Store: st, Clock: clk}).Acquire("l", []byte("t"), time.Second, 25*time.Millisecond)
	require.NoError(t, err)
	assert.False(t, res.Acquired)
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{10 * ms, 15 * ms}, clk.sleeps, "the last pause is cut to the budget")
	assert.Equal(t, 25*ms, clk.Now().Sub(start))
	assert.Equal(t, 3, res.Attempts)
}

func TestAcquireZeroBudgetTriesOnce(t *testing.T) {
	clk := &fakeClock{}
	st := &scripted{clock: clk}
	res, err := (&Locker{Store: st, Clock: clk}).Acquire("l", []byte("t"), time.Second, 0)
	require.NoError(t, err)
	assert.Equal(t, Result{Attempts: 1}, res)
}

func TestAcquireErrorIsNotContention(t *testing.T) {
	clk := &fakeClock{}
	boom := errors.New("backend unreachable")
	st := &scripted{clock: clk, err: boom}
	res, err := (&Locker{Store: st, Clock: clk}).Acquire("l", []byte("t"), time.Second, 30*time.Second)
	assert.ErrorIs(t, err, boom)
	assert.False(t, res.Acquired)
	assert.Equal(t, 1, res.Attempts, "no retry on an error")
	assert.Empty(t, clk.sleeps)
}

// memStore exposes memstore.Store as a Store, with or without its Wait.
type memStore struct{ *memstore.Store }

func (m memStore) SetNX(k string, v []byte, ttl time.Duration) (contract.SetNXOutcome, error) {
	return m.Store.SetNX(k, v, ttl)
}

type waitingStore struct{ memStore }

func (w waitingStore) Wait(k string, d time.Duration) (bool, error) { return w.Store.Wait(k, d), nil }

// waitEntered is a waitingStore that says on entered when a Wait begins.
type waitEntered struct {
	waitingStore
	entered chan struct{}
}

func (w waitEntered) Wait(k string, d time.Duration) (bool, error) {
	select {
	case w.entered <- struct{}{}:
	default:
	}
	return w.waitingStore.Wait(k, d)
}

// The pause between attempts is the store's Wait, which the release ends:
// with steps of 10 minutes, the waiter has the lock at its second attempt
// long before its first pause would have run out (a plain sleep, or a
// Wait the release did not wake, would take the whole step). The 2 minute
// bounds are hang catches, not speed bounds; the holder's hour outlasts
// them.
func TestAcquireWithWaitGetsTheLockRightAfterRelease(t *testing.T) {
	const hangCatch, step = 2 * time.Minute, 10 * time.Minute
	s := memstore.New(memstore.Options{})
	defer s.Close()
	_, err := s.SetNX("l", []byte("holder"), time.Hour)
	require.NoError(t, err)

	st := waitEntered{waitingStore{memStore{s}}, make(chan struct{}, 1)}
	l := &Locker{Store: st, Backoff: Backoff{Initial: step, Max: step}}
	done := make(chan Result, 1)
	go func() {
		res, err := l.Acquire("l", []byte("waiter"), time.Minute, 2*step)
		assert.NoError(t, err)
		done <- res
	}()
	select {
	case <-st.entered: // refused once, it pauses in Wait
	case <-time.After(hangCatch):
		t.Fatal("the waiter did not pause in the store's Wait")
	}
	require.True(t, s.DelIfEq("l", []byte("holder")))
	var res Result
	select {
	case res = <-done:
	case <-time.After(hangCatch):
		t.Fatalf("still pausing %v after the release: the release did not end the pause", hangCatch)
	}
	require.True(t, res.Acquired)
	assert.Equal(t, 2, res.Attempts, "the attempt right after the release won")
	v, _ := s.Get("l")
	assert.Equal(t, "waiter", string(v))
}

// 100 "requests" on one session, each lock / read / modify / guarded write /
// release, released together at a barrier: no update is lost.
func TestConcurrentRequestsLoseNoUpdate(t *testing.T) {
	for _, store := range []struct {
		name string
		st   func(*memstore.Store) Store
	}{
		{"wait", func(s *memstore.Store) Store { return waitingStore{memStore{s}} }},
		{"sleep", func(s *memstore.Store) Store { return memStore{s} }},
	} {
		t.Run(store.name, func(t *testing.T) {
			s := memstore.New(memstore.Options{})
			defer s.Close()
			l := &Locker{Store: store.st(s)}
			const n = 100
			seen := make([]int, n)
			var ready, done sync.WaitGroup
			start := make(chan struct{})
			ready.Add(n)
			done.Add(n)
			for i := 0; i < n; i++ {
				go func(i int) {
					defer done.Done()
					tok, _ := sessionkeys.NewToken()
					ready.Done()
					<-start
					res, err := l.Acquire(sessionkeys.LockKey("s"), []byte(tok), time.Minute, time.Minute)
					if !assert.NoError(t, err) || !assert.True(t, res.Acquired) {
						return
					}
					v, _ := s.Get(sessionkeys.DataKey("s"))
					seen[i] = len(v)
					ok, err := backend.SetGuarded(s, sessionkeys.DataKey("s"), append(append([]byte{}, v...), 'x'), time.Minute, sessionkeys.LockKey("s"), []byte(tok))
					assert.NoError(t, err)
					assert.True(t, ok)
					assert.True(t, s.DelIfEq(sessionkeys.LockKey("s"), []byte(tok)))
				}(i)
			}
			ready.Wait()
			close(start)
			done.Wait()
			v, _ := s.Get(sessionkeys.DataKey("s"))
			assert.Len(t, v, n)
			distinct := map[int]bool{}
			for _, x := range seen {
				distinct[x] = true
			}
			assert.Len(t, distinct, n, "every request saw a different counter")
		})
	}
}

// scriptedReader is scripted with the Step of SetNXGet: the attempt that
// wins reads.
type scriptedReader struct {
	scripted
	data string
}

func (s *scriptedReader) Step(st *contract.Step) error {
	out, err := s.SetNX(st.Lock, st.Token, st.LockTTL)
	st.Outcome, st.Held, st.N, st.Found = out, out == contract.Inserted, 0, false
	if err != nil || out != contract.Inserted {
		return err
	}
	st.N, st.Found = copy(st.Dst, s.data), true
	return nil
}

func TestAcquireGetBacksOffAndReadsWithTheWinningAttempt(t *testing.T) {
	clk := &fakeClock{}
	st := &scriptedReader{scripted: scripted{clock: clk, answers: []contract.SetNXOutcome{contract.Exists, contract.Exists, contract.Inserted}}, data: "v1"}
	dst := make([]byte, 8)
	start := clk.Now()
	res, read, err := (&Locker{Store: st, Clock: clk}).AcquireGet("l", []byte("t"), time.Second, time.Second, "d", dst)
	require.NoError(t, err)
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{10 * ms, 20 * ms}, clk.sleeps, "the same schedule as Acquire")
	assert.Equal(t, Result{Acquired: true, Attempts: 3}, res)
	assert.Equal(t, 30*ms, clk.Now().Sub(start))
	assert.Equal(t, Read{N: 2, Found: true}, read)
	assert.Equal(t, "v1", string(dst[:read.N]))

	st = &scriptedReader{scripted: scripted{clock: clk}, data: "v1"}
	res, read, err = (&Locker{Store: st, Clock: clk}).AcquireGet("l", []byte("t"), time.Second, 50*ms, "d", dst)
	require.NoError(t, err)
	assert.False(t, res.Acquired)
	assert.Equal(t, Read{}, read, "nothing read without the lock")

	st = &scriptedReader{scripted: scripted{clock: clk, err: errors.New("down")}}
	_, _, err = (&Locker{Store: st, Clock: clk}).AcquireGet("l", []byte("t"), time.Second, time.Second, "d", dst)
	assert.Error(t, err, "a store error is not contention")
}

// scriptedFencedReader is scriptedReader with the Step of SetNXGetFenced:
// the attempt that wins reads and mints the next fence.
type scriptedFencedReader struct {
	scriptedReader
	fence int64
}

func (s *scriptedFencedReader) Step(st *contract.Step) error {
	st.Fence = 0
	if err := s.scriptedReader.Step(st); err != nil || st.Outcome != contract.Inserted {
		return err
	}
	if st.Fenced {
		s.fence++
		st.Fence = s.fence
	}
	return nil
}

func TestAcquireGetFencedBacksOffAndReadsAndFencesWithTheWinningAttempt(t *testing.T) {
	clk := &fakeClock{}
	st := &scriptedFencedReader{scriptedReader: scriptedReader{
		scripted: scripted{clock: clk, answers: []contract.SetNXOutcome{contract.Exists, contract.Exists, contract.Inserted}}, data: "v1"}, fence: 41}
	dst := make([]byte, 8)
	res, read, fence, err := (&Locker{Store: st, Clock: clk}).AcquireGetFenced(st, "l", []byte("t"), time.Second, time.Second, "d", dst)
	require.NoError(t, err)
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{10 * ms, 20 * ms}, clk.sleeps, "the same schedule as Acquire")
	assert.Equal(t, Result{Acquired: true, Attempts: 3}, res)
	assert.Equal(t, Read{N: 2, Found: true}, read)
	assert.Equal(t, int64(42), fence, "the winning attempt's fence")

	st = &scriptedFencedReader{scriptedReader: scriptedReader{scripted: scripted{clock: clk}, data: "v1"}}
	res, read, fence, err = (&Locker{Store: st, Clock: clk}).AcquireGetFenced(st, "l", []byte("t"), time.Second, 50*ms, "d", dst)
	require.NoError(t, err)
	assert.False(t, res.Acquired)
	assert.Equal(t, Read{}, read, "nothing read without the lock")
	assert.Zero(t, fence, "nor fenced")

	st = &scriptedFencedReader{scriptedReader: scriptedReader{scripted: scripted{clock: clk, err: errors.New("down")}}}
	_, _, _, err = (&Locker{Store: st, Clock: clk}).AcquireGetFenced(st, "l", []byte("t"), time.Second, time.Second, "d", dst)
	assert.Error(t, err, "a store error is not contention")
}

// lockAttempts is a LockStore that is always refused and records the
// claim of each attempt.
type lockAttempts struct {
	scripted
	claims []time.Duration
}

func (s *lockAttempts) LockAttempt(_ string, _ []byte, _ contract.LockMode, _, claim time.Duration) (contract.SetNXOutcome, int64, error) {
	s.claims = append(s.claims, claim)
	out, err := s.SetNX("", nil, 0)
	return out, 0, err
}

func TestAcquireLockClaimsWithinTheBudget(t *testing.T) {
	// An exclusive wait of 400 ms: each attempt claims contract.WriterClaim, or
	// what is left of the budget when that is less, and the attempt at the
	// end of the budget claims nothing, so no claim outlives the call.
	clk := &fakeClock{}
	st := &lockAttempts{scripted: scripted{clock: clk}}
	l := &Locker{Store: st, Clock: clk}
	res, fence, err := l.AcquireLock(st, "l", []byte("t"), contract.LockExclusive, time.Second, 400*time.Millisecond)
	require.NoError(t, err)
	assert.False(t, res.Acquired)
	assert.Zero(t, fence)
	ms := time.Millisecond
	// Attempts at 0, 10, 30, 70, 150, 250, 350 and 400 ms.
	assert.Equal(t, []time.Duration{250 * ms, 250 * ms, 250 * ms, 250 * ms, 250 * ms, 150 * ms, 50 * ms, 0}, st.claims)

	// A shared attempt never claims.
	st = &lockAttempts{scripted: scripted{clock: clk}}
	_, _, err = l.AcquireLock(st, "l", []byte("t"), contract.LockShared, time.Second, 100*time.Millisecond)
	require.NoError(t, err)
	for _, c := range st.claims {
		assert.Zero(t, c)
	}
	assert.NotEmpty(t, st.claims)
}
