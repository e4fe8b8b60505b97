package redisstore

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/lockwait"
)

const (
	excl   = contract.LockExclusive
	shared = contract.LockShared
)

// granted attempts key for tok and requires the grant; it returns the
// grant's fence.
func granted(t *testing.T, s *Store, key, tok string, mode contract.LockMode, ttl time.Duration) int64 {
	t.Helper()
	out, f, err := s.LockAttempt(key, []byte(tok), mode, ttl, 0)
	require.NoError(t, err, tok)
	require.Equal(t, contract.Inserted, out, tok)
	require.Positive(t, f, tok)
	return f
}

// refused attempts key for tok (with claim) and requires the refusal.
func refusedRW(t *testing.T, s *Store, key, tok string, mode contract.LockMode, claim time.Duration) {
	t.Helper()
	out, f, err := s.LockAttempt(key, []byte(tok), mode, time.Minute, claim)
	require.NoError(t, err, tok)
	require.Equal(t, contract.Exists, out, tok)
	require.Zero(t, f, tok)
}

func holders(t *testing.T, s *Store, key string) (contract.LockMode, int) {
	t.Helper()
	m, n, err := s.LockInfo(key)
	require.NoError(t, err)
	return m, n
}

func released(t *testing.T, s *Store, key, tok string) bool {
	t.Helper()
	ok, err := s.LockRelease(key, []byte(tok))
	require.NoError(t, err)
	return ok
}

// record is the reader record key holds, decoded by memstore.
func record(t *testing.T, s *Store, key string) contract.ReaderRecord {
	t.Helper()
	r, err := s.do(nil, "get", s.redisKey(key))
	require.NoError(t, err)
	require.False(t, r.null, "%s holds nothing", key)
	rec, err := contract.ParseReaderRecord(r.b)
	require.NoError(t, err, "kv decodes the script's record")
	return rec
}

func pttl(t *testing.T, s *Store, rk string) int64 {
	t.Helper()
	r, err := s.do(nil, "pttl", rk)
	require.NoError(t, err)
	return r.n
}

// serverMs is the server's clock in ms, the unit of a record's deadlines.
func serverMs(t *testing.T, s *Store) int64 {
	t.Helper()
	tm, err := s.c.Time(ctx).Result()
	require.NoError(t, err)
	return tm.UnixMilli()
}

// rwRules walks name through memstore/readers_test.go's cases: readers share, a
// refused writer claims and its claim refuses new readers, the last
// reader's release leaves the claim alone (free), the writer takes it as
// set_nx leaves it, and a token that holds nothing is a miss.
func rwRules(t *testing.T, s *Store, name string) {
	rk := s.redisKey(name)
	f1 := granted(t, s, name, "r1", shared, time.Minute)
	f2 := granted(t, s, name, "r2", shared, 2*time.Minute)
	assert.Greater(t, f2, f1)
	m, n := holders(t, s, name)
	assert.Equal(t, shared, m)
	assert.Equal(t, 2, n)
	assert.InDelta(t, (2 * time.Minute).Milliseconds(), pttl(t, s, rk), 5000, "the key lapses with its latest hold")
	now := serverMs(t, s)
	rec := record(t, s, name)
	require.Len(t, rec.Holds, 2)
	assert.Equal(t, "r1", string(rec.Holds[0].Token))
	assert.InDelta(t, now+time.Minute.Milliseconds(), rec.Holds[0].Deadline, 5000, "deadlines are the server's ms")
	assert.Zero(t, rec.Claim)

	// A writer is refused and claims; the claim refuses a new reader.
	refusedRW(t, s, name, "w", excl, 10*time.Second)
	assert.InDelta(t, now+10*time.Second.Milliseconds(), record(t, s, name).Claim, 5000)
	refusedRW(t, s, name, "r3", shared, 0)
	_, n = holders(t, s, name)
	assert.Equal(t, 2, n)

	// The readers leave; the last leaves the claim alone: free, but there.
	assert.True(t, released(t, s, name, "r1"))
	assert.False(t, released(t, s, name, "r1"), "released already")
	assert.True(t, released(t, s, name, "r2"))
	m, n = holders(t, s, name)
	assert.Equal(t, excl, m)
	assert.Zero(t, n, "a claim alone is free")
	rec = record(t, s, name)
	assert.Empty(t, rec.Holds)
	assert.NotZero(t, rec.Claim)
	assert.InDelta(t, (10 * time.Second).Milliseconds(), pttl(t, s, rk), 5000, "the claim alone keeps the key")
	refusedRW(t, s, name, "r3", shared, 0)

	// The writer takes it: the value is its token with its TTL, as set_nx leaves it.
	f3 := granted(t, s, name, "w", excl, 30*time.Second)
	assert.Greater(t, f3, f2)
	v, found, err := s.GetInto(name, make([]byte, 64))
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, 1, v)
	r, _ := s.do(nil, "get", rk)
	assert.Equal(t, "w", string(r.b))
	assert.InDelta(t, (30 * time.Second).Milliseconds(), pttl(t, s, rk), 5000)
	m, n = holders(t, s, name)
	assert.Equal(t, excl, m)
	assert.Equal(t, 1, n)
	refusedRW(t, s, name, "r4", shared, 0)
	refusedRW(t, s, name, "w2", excl, time.Second)
	assert.False(t, released(t, s, name, "x"), "a wrong token is a miss")
	ok, err := s.LockRefresh(name, []byte("x"), time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "a wrong token refreshes nothing")
	ok, err = s.LockRefresh(name, []byte("w"), 0)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, int64(-1), pttl(t, s, rk), "refreshed to no expiry")
	ok, err = s.ExpireIfEq(name, []byte("w"), time.Minute)
	require.NoError(t, err)
	assert.True(t, ok, "expire_if_eq works on an exclusive hold")
	assert.True(t, released(t, s, name, "w"))
	m, n = holders(t, s, name)
	assert.Equal(t, excl, m)
	assert.Zero(t, n)
	found, err = s.Exists(name)
	require.NoError(t, err)
	assert.False(t, found)

	// set_nx's lock is an exclusive hold; del_if_eq releases a lock_acquire's.
	out, err := s.SetNX(name, []byte("plain"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	refusedRW(t, s, name, "r5", shared, 0)
	_, n = holders(t, s, name)
	assert.Equal(t, 1, n)
	assert.True(t, released(t, s, name, "plain"))
	granted(t, s, name, "w3", excl, time.Minute)
	ok, err = s.DelIfEq(name, []byte("w3"))
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestReadWriteRulesOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	rwRules(t, s, "rw:rules")
	rwRules(t, s, "a}b") // a name with no line
}

func TestLapsedHoldsAndClaimsCountAsAbsent(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	name := "rw:lapse"
	granted(t, s, name, "old", shared, 30*time.Millisecond)
	granted(t, s, name, "long", shared, time.Minute)
	require.Eventually(t, func() bool { _, n := holders(t, s, name); return n == 1 }, hangCatch, 5*time.Millisecond)
	assert.False(t, released(t, s, name, "old"), "a lapsed hold is absent")
	ok, err := s.LockRefresh(name, []byte("old"), time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "a lapsed hold is not refreshed")

	// A lapsed claim no longer refuses readers. The claim refuses them
	// while it lives: asserted unless the host took longer than the claim
	// to get to the next attempt (then it may have lapsed).
	const claim = time.Second
	claimed := time.Now()
	refusedRW(t, s, name, "w", excl, claim)
	out, _, err := s.LockAttempt(name, []byte("r"), shared, time.Minute, 0)
	require.NoError(t, err)
	if time.Since(claimed) < claim {
		require.Equal(t, contract.Exists, out, "refused by the claim")
	}
	require.Eventually(t, func() bool {
		if out == contract.Inserted {
			return true
		}
		out, _, err = s.LockAttempt(name, []byte("r"), shared, time.Minute, 0)
		require.NoError(t, err)
		return out == contract.Inserted
	}, hangCatch, 5*time.Millisecond)
	assert.True(t, released(t, s, name, "long"))
	assert.True(t, released(t, s, name, "r"))
	found, _ := s.Exists(name)
	assert.False(t, found, "the last release removed the record")

	// The key lapses with the record's latest deadline: b's, past a's
	// (asserted unless the host took longer than the difference to read it).
	granted(t, s, name, "a", shared, 400*time.Millisecond)
	grantedB := time.Now()
	granted(t, s, name, "b", shared, 2*time.Second)
	if left := pttl(t, s, name); time.Since(grantedB) < 1600*time.Millisecond {
		assert.Greater(t, left, int64(400))
	}
	require.Eventually(t, func() bool { found, _ := s.Exists(name); return !found }, hangCatch, 5*time.Millisecond)

	// A refreshed hold outlives its first TTL (its PTTL shows it, whatever
	// the host's pace); one without expiry keeps the key.
	granted(t, s, name, "a", shared, 30*time.Second)
	ok, err = s.LockRefresh(name, []byte("a"), time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Greater(t, pttl(t, s, name), (30 * time.Second).Milliseconds(), "past the first TTL")
	_, n := holders(t, s, name)
	assert.Equal(t, 1, n)
	ok, err = s.LockRefresh(name, []byte("a"), 0)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(-1), pttl(t, s, name))
	granted(t, s, name, "b", shared, time.Minute)
	assert.Equal(t, int64(-1), pttl(t, s, name), "a hold without expiry keeps the record")
	assert.True(t, released(t, s, name, "a"))
	assert.InDelta(t, time.Minute.Milliseconds(), pttl(t, s, name), 5000)
	assert.True(t, released(t, s, name, "b"))

	// An exclusive hold lapses with its TTL.
	granted(t, s, name, "w", excl, 30*time.Millisecond)
	require.Eventually(t, func() bool { _, n := holders(t, s, name); return n == 0 }, hangCatch, 5*time.Millisecond)
	assert.False(t, released(t, s, name, "w"))
}

// The scripts read contract's encoding as it writes it, and refuse what it
// refuses.
func TestSharedAttemptRefusals(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	name := "rw:refusals"
	granted(t, s, name, "t", shared, time.Minute)
	_, _, err := s.LockAttempt(name, []byte("t"), shared, time.Minute, 0)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument, "a token holds a name for reading once")
	for _, bad := range [][]byte{nil, make([]byte, 256)} {
		_, _, err = s.LockAttempt(name, bad, shared, time.Minute, 0)
		assert.ErrorIs(t, err, contract.ErrInvalidArgument, "token of %d bytes", len(bad))
	}
	_, _, err = s.LockAttempt(name, []byte("u"), contract.LockMode(2), time.Minute, 0)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	_, _, err = s.LockAttempt(name, []byte("u"), shared, -time.Second, 0)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	_, _, err = s.LockAttempt("", []byte("u"), shared, time.Minute, 0)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	_, n := holders(t, s, name)
	assert.Equal(t, 1, n, "the refused calls changed nothing")

	// A record contract encoded (deadlines 0: no expiry) is read and
	// extended, up to Redis's limit.
	full := contract.ReaderRecord{}
	for i := range MaxReadHolds {
		full.Holds = append(full.Holds, contract.ReadHold{Token: []byte("h" + strconv.Itoa(i))})
	}
	v := full.AppendTo(nil)
	require.NoError(t, s.Set(name, v, 0))
	m, n := holders(t, s, name)
	assert.Equal(t, shared, m)
	assert.Equal(t, MaxReadHolds, n)
	_, _, err = s.LockAttempt(name, []byte("one more"), shared, time.Minute, 0)
	assert.ErrorIs(t, err, contract.ErrNoMemory)
	assert.Contains(t, err.Error(), "1000 read holds")
	r, _ := s.do(nil, "get", name)
	assert.Equal(t, v, r.b, "refused: unchanged")
	assert.True(t, released(t, s, name, "h0"))
	granted(t, s, name, "one more", shared, time.Minute)
	rec := record(t, s, name)
	assert.Len(t, rec.Holds, MaxReadHolds)
	assert.Equal(t, "h1", string(rec.Holds[0].Token))
	assert.Equal(t, "one more", string(rec.Holds[len(rec.Holds)-1].Token))
	assert.Equal(t, int64(-1), pttl(t, s, name), "kv's holds have no deadline")

	// A value that begins like a record but does not decode is held.
	bad := append(contract.ReaderRecord{}.AppendTo(nil), 5, 'a')
	require.NoError(t, s.Set(name, bad, 0))
	refusedRW(t, s, name, "r", shared, 0)
	refusedRW(t, s, name, "w", excl, time.Second)
	m, n = holders(t, s, name)
	assert.Equal(t, excl, m)
	assert.Equal(t, 1, n)
	r, _ = s.do(nil, "get", name)
	assert.Equal(t, bad, r.b, "unchanged")
}

// A name's grants share one sequence across modes and with SetNXFenced,
// in the fence key SetFenced checks.
func TestFencesIncreaseAcrossModes(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	name := "rw:fence"
	var fences []int64
	fences = append(fences, granted(t, s, name, "w", excl, 0))
	assert.Equal(t, int64(-1), pttl(t, s, fenceKey(name)), "a grant without TTL keeps its fence key")
	assert.True(t, released(t, s, name, "w"))
	fences = append(fences, granted(t, s, name, "r1", shared, time.Minute))
	assert.InDelta(t, (time.Minute + fenceKeep).Milliseconds(), pttl(t, s, fenceKey(name)), 5000)
	fences = append(fences, granted(t, s, name, "r2", shared, time.Minute))
	assert.True(t, released(t, s, name, "r1"))
	assert.True(t, released(t, s, name, "r2"))
	out, f, err := backend.SetNXFenced(s, name, []byte("n"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	fences = append(fences, f)
	refusedRW(t, s, name, "r3", shared, 0)
	assert.True(t, released(t, s, name, "n"))
	fences = append(fences, granted(t, s, name, "w", excl, time.Minute))
	for i := 1; i < len(fences); i++ {
		assert.Greater(t, fences[i], fences[i-1], "%v", fences)
	}
	latest, err := s.Fence(name)
	require.NoError(t, err)
	assert.Equal(t, fences[len(fences)-1], latest)
	ok, err := backend.SetFenced(s, "rw:data", []byte("x"), 0, name, fences[len(fences)-2])
	require.NoError(t, err)
	assert.False(t, ok, "an older grant's fence is stale")
	ok, err = backend.SetFenced(s, "rw:data", []byte("x"), 0, name, latest)
	require.NoError(t, err)
	assert.True(t, ok)

	require.NoError(t, s.Flush())
	assert.Greater(t, granted(t, s, name, "r", shared, time.Minute), latest, "the server's clock carries fences on")
}

func TestClusterReadWriteLocks(t *testing.T) {
	s := open(t, clusterURL(redistest.StartCluster(t)))
	rwRules(t, s, "{rw}:rules")
	rwRules(t, s, "rwplain") // hashed whole: its fence key and line take it as their tag

	f := granted(t, s, "{rw}:lock", "r", shared, time.Minute)
	ok, err := backend.SetFenced(s, "{rw}:data", []byte("x"), 0, "{rw}:lock", f)
	require.NoError(t, err)
	assert.True(t, ok, "a read grant's fence guards a write in its slot")
	_, err = backend.SetFenced(s, "elsewhere", []byte("x"), 0, "{rw}:lock", f)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)

	_, _, err = s.LockAttempt("a}b", []byte("r"), shared, time.Minute, 0)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "hash tag")
	found, _ := s.Exists("a}b")
	assert.False(t, found, "refused before anything changed")
}

func TestAnEvictingServerRefusesReadWriteLocks(t *testing.T) {
	srv := redistest.Start(t, evicting("allkeys-lru")...)
	s := open(t, "redis://"+srv.Addr)
	_, _, err := s.LockAttempt("rw", []byte("r"), shared, time.Minute, 0)
	refusedForEviction(t, err, "LockAttempt", "allkeys-lru")
	_, err = s.LockRelease("rw", []byte("r"))
	refusedForEviction(t, err, "LockRelease", "allkeys-lru")
	_, err = s.LockRefresh("rw", []byte("r"), time.Minute)
	refusedForEviction(t, err, "LockRefresh", "allkeys-lru")
	// The reads of a lock answer from keys the server may have evicted: a
	// lock reported free while its holder works, a fence gone back to 0.
	_, _, err = s.LockInfo("rw")
	refusedForEviction(t, err, "LockInfo", "allkeys-lru")
	_, err = s.Fence("rw")
	refusedForEviction(t, err, "Fence", "allkeys-lru")
	n, err := admin(t, srv.Addr).Exists(ctx, "rw", fenceKey("rw")).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing was sent")

	s = open(t, "redis://"+srv.Addr+"?allow_evicting_server=1")
	granted(t, s, "rw", "r", shared, time.Minute)
	assert.True(t, released(t, s, "rw", "r"))
}

// waiting is how many callers wait on key in s's hub.
func waiting(s *Store, key string) int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return len(s.hub.waiters[releaseChannel(s.redisKey(key))])
}

// subscribed says whether s's hub's subscription to key's channel stands
// on the server: a release published from then on reaches its waiters.
func subscribed(t *testing.T, s *Store, key string) bool {
	ch := releaseChannel(s.redisKey(key))
	n, err := s.c.PubSubNumSub(ctx, ch).Result()
	return err == nil && n[ch] >= 1
}

// waitFor starts s.Wait(key, timeout) and returns its outcome's channel
// once the waiter is in s's hub as waiter number nth, subscribed.
func waitFor(t *testing.T, s *Store, key string, timeout time.Duration, nth int) <-chan time.Duration {
	t.Helper()
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		woken, err := s.Wait(key, timeout)
		assert.NoError(t, err)
		assert.True(t, woken, "woken, not timed out")
		done <- time.Since(start)
	}()
	require.Eventually(t, func() bool { return waiting(s, key) == nth && subscribed(t, s, key) }, hangCatch, time.Millisecond)
	return done
}

// A writer waits on readers; in its process a reader waits before it, so a
// release that wakes the oldest waiter would wake the reader only. The last
// reader's release wakes both, long before their timeout. (The holds, the
// claim and the waits last far beyond hangCatch: no host's pace lets one
// lapse or run out.)
func TestAWaitingWriterIsWokenByTheLastReadersRelease(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, "redis://"+srv.Addr), open(t, "redis://"+srv.Addr) // two processes
	name := "rw:wake"
	granted(t, a, name, "r1", shared, time.Hour)
	granted(t, a, name, "r2", shared, time.Hour)
	refusedRW(t, b, name, "w", excl, time.Hour)
	refusedRW(t, b, name, "r3", shared, 0)
	reader := waitFor(t, b, name, 5*hangCatch, 1)
	writer := waitFor(t, b, name, 5*hangCatch, 2)
	assert.True(t, released(t, a, name, "r1"))
	assert.True(t, released(t, a, name, "r2"))
	for _, w := range []<-chan time.Duration{writer, reader} {
		select {
		case d := <-w:
			assert.Less(t, d, 2*hangCatch)
		case <-time.After(2 * hangCatch):
			t.Fatal("not woken by the last reader's release")
		}
	}
	refusedRW(t, b, name, "r3", shared, 0)
	granted(t, b, name, "w", excl, time.Minute)
}

// Readers wait on a writer. Its release wakes the oldest; that reader's
// grant wakes the next, so a run of readers enters in turn.
func TestWaitingReadersAreWokenInTurn(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, "redis://"+srv.Addr), open(t, "redis://"+srv.Addr)
	name := "rw:readers"
	granted(t, a, name, "w", excl, time.Hour)
	first := waitFor(t, b, name, 5*hangCatch, 1)
	second := waitFor(t, b, name, 5*hangCatch, 2)
	assert.True(t, released(t, a, name, "w"))
	select {
	case d := <-first:
		assert.Less(t, d, 2*hangCatch)
	case <-time.After(2 * hangCatch):
		t.Fatal("the first reader was not woken by the writer's release")
	}
	// Whether the second is still waiting here is not the test's to say: a
	// wait looks at the key once its subscription stands (a PING's reply
	// later), and a look that comes after the release sees the name free.
	granted(t, b, name, "r1", shared, time.Minute)
	select {
	case d := <-second:
		assert.Less(t, d, 2*hangCatch)
	case <-time.After(2 * hangCatch):
		t.Fatal("the second reader was not woken by the first one's grant")
	}
	granted(t, b, name, "r2", shared, time.Minute)
}

// acquireRW is a test's lock_acquire loop: attempts (a writer claiming),
// and Wait between them, until granted; it fails the test past budget.
func acquireRW(t *testing.T, s *Store, key, tok string, mode contract.LockMode, budget time.Duration) (int64, bool) {
	var claim time.Duration
	if mode == excl {
		claim = contract.WriterClaim
	}
	deadline := time.Now().Add(budget)
	for time.Now().Before(deadline) {
		out, f, err := s.LockAttempt(key, []byte(tok), mode, time.Minute, claim)
		if !assert.NoError(t, err) {
			return 0, false
		}
		if out == contract.Inserted {
			return f, true
		}
		if _, err := s.Wait(key, 20*time.Millisecond); !assert.NoError(t, err) {
			return 0, false
		}
	}
	t.Errorf("%s not granted within %v", tok, budget)
	return 0, false
}

// Goroutines with stores of their own (separate connections, as processes
// have), released together, take one name in both modes: a writer is never
// beside another holder, and every grant's fence is new.
func TestReadersAndWritersNeverOverlap(t *testing.T) {
	srv := redistest.Start(t)
	const workers, rounds = 8, 25
	name := "rw:overlap"
	var readers, writers, maxReaders atomic.Int64
	var mu sync.Mutex
	fences := map[int64]bool{}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		s := open(t, "redis://"+srv.Addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			last := int64(0)
			for i := range rounds {
				mode := shared
				if (w+i)%3 == 0 {
					mode = excl
				}
				tok := fmt.Sprintf("%d-%d", w, i)
				f, ok := acquireRW(t, s, name, tok, mode, hangCatch)
				if !ok {
					return
				}
				assert.Greater(t, f, last, "a worker's fences increase")
				last = f
				mu.Lock()
				assert.False(t, fences[f], "fence %d granted twice", f)
				fences[f] = true
				mu.Unlock()
				if mode == excl {
					assert.Equal(t, int64(1), writers.Add(1), "one writer")
					assert.Zero(t, readers.Load(), "no reader beside a writer")
					time.Sleep(time.Millisecond) // the work under the lock
					writers.Add(-1)
				} else {
					n := readers.Add(1)
					for m := maxReaders.Load(); n > m && !maxReaders.CompareAndSwap(m, n); m = maxReaders.Load() {
					}
					assert.Zero(t, writers.Load(), "no writer beside a reader")
					time.Sleep(time.Millisecond)
					readers.Add(-1)
				}
				ok, err := s.LockRelease(name, []byte(tok))
				assert.NoError(t, err)
				assert.True(t, ok, "%s released its own hold", tok)
			}
		}()
	}
	close(start)
	wg.Wait()
	assert.Len(t, fences, workers*rounds)
	t.Logf("at most %d readers at once", maxReaders.Load())
}

// Readers that keep the name held between them do not starve a writer:
// its claim refuses new readers until the held ones leave.
func TestAWaitingWriterIsNotStarvedByReaders(t *testing.T) {
	srv := redistest.Start(t)
	name := "rw:starve"
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	for r := range 3 {
		s := open(t, "redis://"+srv.Addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tok := fmt.Sprintf("r%d-%d", r, i)
				if _, ok := acquireRW(t, s, name, tok, shared, hangCatch); !ok {
					return
				}
				reads.Add(1)
				time.Sleep(5 * time.Millisecond)
				_, err := s.LockRelease(name, []byte(tok))
				assert.NoError(t, err)
			}
		}()
	}
	s := open(t, "redis://"+srv.Addr)
	require.Eventually(t, func() bool { return reads.Load() >= 10 }, hangCatch, time.Millisecond)
	// The readers read on until stopped: a starved writer would wait out
	// its budget (a hang catch, not a speed bound).
	_, ok := acquireRW(t, s, name, "w", excl, hangCatch)
	close(stop)
	require.True(t, ok, "the writer got in")
	m, n := holders(t, s, name)
	assert.Equal(t, excl, m, "held by the writer")
	assert.Equal(t, 1, n)
	assert.True(t, released(t, s, name, "w"))
	wg.Wait()
}

// The scripts and contract's Decide* functions, given the same calls, answer the
// same and leave the same holds in the same order (random calls; no hold
// lapses: every TTL 0, a claim that outlives the test).
func TestTheScriptsDecideAsKvDoes(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	name := "rw:differential"
	const now, claimUntil = 1, 1 << 40
	var v []byte // contract's model of the name
	live := false
	apply := func(d contract.LockDecision) {
		switch d.Write {
		case contract.LockStore:
			v, live = append([]byte(nil), d.Value...), true
		case contract.LockRemove:
			v, live = nil, false
		}
	}
	// Tokens that hold others' encodings (length byte, then token), so
	// that a token's bytes also appear where no hold of it begins.
	tokens := []string{"t0", "t1", "t2", "t3", "\x02t1", "x\x02t1", "\x02t1\x02t1", "\x04x\x02t1"}
	rng := rand.New(rand.NewPCG(17, 1))
	for step := range 1000 {
		tok := []byte(tokens[rng.IntN(len(tokens))])
		what := fmt.Sprintf("step %d: %q", step, tok)
		switch rng.IntN(4) {
		case 0, 1:
			mode, claim, until := shared, time.Duration(0), int64(0)
			if rng.IntN(3) == 0 {
				mode = excl
				if rng.IntN(2) == 0 {
					claim, until = time.Hour, claimUntil
				}
			}
			d, kerr := contract.DecideAcquire(v, live, mode, tok, 0, until, now)
			out, f, err := s.LockAttempt(name, tok, mode, 0, claim)
			what += fmt.Sprintf(" attempt mode %d claim %v", mode, claim)
			if kerr != nil {
				require.Error(t, err, what)
				assert.Equal(t, errors.Is(kerr, contract.ErrInvalidArgument), errors.Is(err, contract.ErrInvalidArgument), what)
				continue
			}
			require.NoError(t, err, what)
			assert.Equal(t, d.Granted, out == contract.Inserted, what)
			assert.Equal(t, d.Granted, f > 0, what)
			apply(d)
		case 2:
			d := contract.DecideRelease(v, live, tok, now)
			ok, err := s.LockRelease(name, tok)
			require.NoError(t, err)
			assert.Equal(t, d.Granted, ok, what+" release")
			apply(d)
		case 3:
			d := contract.DecideRefresh(v, live, tok, 0, now)
			ok, err := s.LockRefresh(name, tok, 0)
			require.NoError(t, err)
			assert.Equal(t, d.Granted, ok, what+" refresh")
			apply(d)
		}
		r, err := s.do(nil, "get", name)
		require.NoError(t, err)
		require.Equal(t, live, !r.null, what)
		if !live {
			continue
		}
		want, werr := contract.ParseReaderRecord(v)
		got, gerr := contract.ParseReaderRecord(r.b)
		require.Equal(t, werr == nil, gerr == nil, what)
		if werr != nil {
			assert.Equal(t, v, r.b, what)
		} else {
			assert.Equal(t, want.Holds, got.Holds, what)
			assert.Equal(t, want.Claim != 0, got.Claim != 0, what)
		}
		wm, wn := contract.LockHolders(v, live, now)
		gm, gn := holders(t, s, name)
		assert.Equal(t, wm, gm, what)
		assert.Equal(t, wn, gn, what)
	}
}

// A claim never rounds up: under a millisecond it is none, so that a
// writer's last attempt does not refuse readers after its wait.
func TestAClaimRoundsDown(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	name := "rw:claim"
	granted(t, s, name, "r", shared, time.Minute)
	refusedRW(t, s, name, "w", excl, 900*time.Microsecond)
	assert.Zero(t, record(t, s, name).Claim, "no claim")
	granted(t, s, name, "r2", shared, time.Minute)
}

// Waiters for a read/write lock in separate processes (each a Store of its
// own) line up as a session lock's do: each one starts once the one before
// it is in line, and they are granted in that order. With writers only,
// each waiter makes two attempts, the one that put it in line and the one
// its turn's wake-up led to: a release wakes the head alone, not a waiter
// in every process. With readers among them, a reader's grant lets in the
// reader behind it, and the writer behind them claims in its turn and is
// let in by the last one's release.
func TestReadWriteWaitersGetTheNameInArrivalOrder(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name  string
		modes []contract.LockMode
	}{
		{"writers", []contract.LockMode{excl, excl, excl, excl, excl, excl}},
		{"mixed", []contract.LockMode{shared, excl, shared, shared, excl, shared}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holder := open(t, "redis://"+srv.Addr)
			name := "rw:order:" + tc.name
			granted(t, holder, name, "holder", excl, time.Hour)
			var mu sync.Mutex
			fences := map[int64]int{} // a grant's fence: the order of the grants
			attempts := make([]int, len(tc.modes))
			renewals := make([]int, len(tc.modes)) // attempts a wait of LineStep or more makes to renew its place
			var wg sync.WaitGroup
			for i, mode := range tc.modes {
				s := open(t, "redis://"+srv.Addr)
				wg.Add(1)
				go func() {
					defer wg.Done()
					tok := []byte("w" + strconv.Itoa(i))
					start := time.Now()
					res, fence, err := (&lockwait.Locker{Store: s}).AcquireLock(s, name, tok, mode, time.Minute, hangCatch)
					renewals[i] = int(time.Since(start) / lockwait.LineStep)
					if !assert.NoError(t, err) || !assert.True(t, res.Acquired) {
						return
					}
					assert.Positive(t, fence)
					mu.Lock()
					fences[fence] = i
					attempts[i] = res.Attempts
					mu.Unlock()
					ok, err := s.LockRelease(name, tok)
					assert.NoError(t, err)
					assert.True(t, ok)
				}()
				require.Eventually(t, func() bool { return lineLength(t, holder, name) == i+1 }, hangCatch, time.Millisecond,
					"waiter %d in line", i)
			}
			assert.True(t, released(t, holder, name, "holder"))
			wg.Wait()
			var got []int
			for _, f := range slices.Sorted(maps.Keys(fences)) {
				got = append(got, fences[f])
			}
			assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, got, "granted in the order they came")
			if tc.name == "writers" {
				for i, n := range attempts {
					assert.LessOrEqual(t, n, 2+renewals[i], "waiter %d woken once, in its turn (attempts %v)", i, attempts)
				}
			}
			t.Logf("attempts per waiter: %v", attempts)
			assert.Equal(t, 0, lineLength(t, holder, name), "nobody left in line")
		})
	}
}

// A writer waiting in line behind a long read hold renews its claim before
// it lapses (its look wakes it at half the claim's time left, not at its
// LineStep), so that a reader outside the line (a process of an older
// library) stays refused for as long as the writer waits: each renewal
// comes well within LineStep of the one before.
func TestAWriterInLineRenewsItsClaimWhileItWaits(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, "redis://"+srv.Addr), open(t, "redis://"+srv.Addr)
	name := "rw:claim"
	granted(t, a, name, "r1", shared, time.Minute)
	done := make(chan bool, 1)
	go func() {
		res, _, err := (&lockwait.Locker{Store: b}).AcquireLock(b, name, []byte("w"), excl, time.Minute, 5*hangCatch)
		assert.NoError(t, err)
		done <- res.Acquired
	}()
	require.Eventually(t, func() bool { return record(t, a, name).Claim != 0 }, hangCatch, time.Millisecond, "the writer claims")
	for range 3 {
		claim := record(t, a, name).Claim
		require.Eventually(t, func() bool { return record(t, a, name).Claim > claim }, lockwait.LineStep*6/10, time.Millisecond,
			"the claim renewed before the writer's LineStep")
	}
	out, _, err := a.LockAttempt(name, []byte("r2"), shared, time.Minute, 0)
	require.NoError(t, err)
	assert.Equal(t, contract.Exists, out, "a reader outside the line is refused by the standing claim")
	assert.True(t, released(t, a, name, "r1"))
	select {
	case got := <-done:
		assert.True(t, got, "the writer has the name")
	case <-time.After(hangCatch):
		t.Fatal("the writer was not let in by the last reader's release")
	}
}

// A head in line whose attempt is refused with an error (its token already
// holds the name for reading; the name has MaxReadHolds read holds) leaves
// the line, its caller giving up, and names the next head as a release
// does. The next head here is a writer whose look finds the name read-held
// with no deadline within its wait: only that message can end its wait
// before its timeout, which is far longer than the test's bound.
func TestAHeadRefusedWithAnErrorWakesTheNextWaiter(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	require.NotNil(t, s.direct, "a standalone server: each waiter has its subscriber connection")
	const lease = 10 * time.Minute // the waiters keep their places, however slow the host
	inLine := func(name, tok, id string, mode contract.LockMode) {
		t.Helper()
		out, _, err := s.LockAttemptInLine(name, []byte(tok), mode, time.Minute, 0, id, lease)
		require.NoError(t, err, id)
		require.Equal(t, contract.Exists, out, "%s in line", id)
	}
	full := contract.ReaderRecord{}
	for i := range MaxReadHolds {
		full.Holds = append(full.Holds, contract.ReadHold{Token: []byte("h" + strconv.Itoa(i))})
	}
	for _, tc := range []struct {
		name  string
		setUp func(name string) // leaves "head" first in line, the reader whose attempt fails
		err   error
	}{
		{"its token holds the name", func(name string) {
			granted(t, s, name, "t", shared, time.Minute)
			inLine(name, "w", "writer", excl) // first in line, refused by the read hold
			inLine(name, "t", "head", shared)
			inLine(name, "z", "next", excl)
			require.NoError(t, s.LeaveLine(name, "writer"))
		}, contract.ErrInvalidArgument},
		{"the name has the most read holds", func(name string) {
			granted(t, s, name, "w", excl, time.Minute)
			inLine(name, "t", "head", shared)
			inLine(name, "z", "next", excl)
			assert.True(t, released(t, s, name, "w"))
			require.NoError(t, s.Set(name, full.AppendTo(nil), 0))
		}, contract.ErrNoMemory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "rw:giveup:" + tc.name
			tc.setUp(name)
			require.Equal(t, 2, lineLength(t, s, name), "head and next in line")
			ch := releaseChannel(s.redisKey(name))
			woke := make(chan bool, 1)
			go func() {
				turn, err := s.WaitLockTurn(name, "next", excl, 5*hangCatch)
				assert.NoError(t, err)
				woke <- turn
			}()
			require.Eventually(t, func() bool {
				n, err := s.c.PubSubNumSub(ctx, ch).Result()
				return err == nil && n[ch] == 1
			}, hangCatch, time.Millisecond, "the next waiter subscribed")

			_, _, err := s.LockAttemptInLine(name, []byte("t"), shared, time.Minute, 0, "head", lease)
			require.ErrorIs(t, err, tc.err)
			assert.Equal(t, 1, lineLength(t, s, name), "the head left the line")
			select {
			case turn := <-woke:
				assert.True(t, turn, "named by the head's leaving, not timed out")
			case <-time.After(hangCatch):
				t.Fatal("the next waiter was not woken by the head's leaving")
			}
			require.NoError(t, s.LeaveLine(name, "next"))
		})
	}
}
