package memstore

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/barrier"
)

// fakeClock is a monotonic clock the test moves by hand.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() int64              { return c.ns.Load() }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func newTestStore(t *testing.T) (*Store, *fakeClock) {
	t.Helper()
	clk := &fakeClock{}
	clk.ns.Store(1_000_000_000)
	s := New(Options{Now: clk.now, SweepInterval: -1})
	t.Cleanup(s.Close)
	return s, clk
}

func TestSetGetOverwrite(t *testing.T) {
	s, _ := newTestStore(t)
	_, ok := s.Get("k")
	assert.False(t, ok)

	require.NoError(t, s.Set("k", []byte("v1"), 0))
	v, ok := s.Get("k")
	require.True(t, ok)
	assert.Equal(t, "v1", string(v))

	require.NoError(t, s.Set("k", []byte("v2"), 0))
	v, _ = s.Get("k")
	assert.Equal(t, "v2", string(v))
	assert.Equal(t, 1, s.Len())
}

func TestBinarySafeKeysAndValues(t *testing.T) {
	s, _ := newTestStore(t)
	keyA, keyB := "a\x00b", "a\x00c"
	val := []byte{0, 1, 0, 255, 0}
	require.NoError(t, s.Set(keyA, val, 0))
	require.NoError(t, s.Set(keyB, []byte("other"), 0))
	v, ok := s.Get(keyA)
	require.True(t, ok)
	assert.Equal(t, val, v)
	_, ok = s.Get("a")
	assert.False(t, ok, "a key must not be cut at its NUL byte")

	require.NoError(t, s.Set("empty", nil, 0))
	v, ok = s.Get("empty")
	assert.True(t, ok)
	assert.Empty(t, v)
}

func TestSetCopiesItsInput(t *testing.T) {
	s, _ := newTestStore(t)
	key := []byte("key")
	val := []byte("value")
	require.NoError(t, s.Set(string(key), val, 0))
	copy(val, "XXXXX")
	v, _ := s.Get("key")
	assert.Equal(t, "value", string(v))
}

func TestInvalidArgumentsChangeNothing(t *testing.T) {
	s, _ := newTestStore(t)
	require.NoError(t, s.Set("k", []byte("old"), 0))
	long := strings.Repeat("x", contract.MaxKeyLen+1)

	cases := []struct {
		name string
		key  string
		ttl  time.Duration
	}{
		{"empty key", "", 0},
		{"long key", long, 0},
		{"negative ttl", "k", -time.Second},
		{"ttl over max", "k", contract.MaxTTL + time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.ErrorIs(t, s.Set(c.key, []byte("new"), c.ttl), contract.ErrInvalidArgument)
			_, err := s.SetNX(c.key, []byte("new"), c.ttl)
			assert.ErrorIs(t, err, contract.ErrInvalidArgument)
			v, _ := s.Get("k")
			assert.Equal(t, "old", string(v))
		})
	}
	assert.NoError(t, s.Set(strings.Repeat("x", contract.MaxKeyLen), nil, contract.MaxTTL), "limits are inclusive")
	assert.Equal(t, 2, s.Len())
}

func TestTTLExpiresOnTheMonotonicClock(t *testing.T) {
	s, clk := newTestStore(t)
	require.NoError(t, s.Set("k", []byte("v"), 2*time.Second))
	clk.advance(2*time.Second - 1)
	_, ok := s.Get("k")
	assert.True(t, ok, "alive one nanosecond before its TTL")
	clk.advance(1)
	_, ok = s.Get("k")
	assert.False(t, ok, "gone at its TTL")
	assert.Equal(t, 0, s.Len(), "Get removes the expired entry")
}

func TestSetWithoutTTLClearsTTL(t *testing.T) {
	s, clk := newTestStore(t)
	require.NoError(t, s.Set("k", []byte("v"), time.Second))
	require.NoError(t, s.Set("k", []byte("v"), 0))
	clk.advance(time.Hour)
	_, ok := s.Get("k")
	assert.True(t, ok)
}

func TestSetNX(t *testing.T) {
	s, clk := newTestStore(t)
	out, err := s.SetNX("lock", []byte("a"), time.Second)
	require.NoError(t, err)
	assert.Equal(t, contract.Inserted, out)

	out, err = s.SetNX("lock", []byte("b"), time.Second)
	require.NoError(t, err)
	assert.Equal(t, contract.Exists, out)
	v, _ := s.Get("lock")
	assert.Equal(t, "a", string(v), "a losing SetNX changes nothing")

	clk.advance(time.Second)
	out, err = s.SetNX("lock", []byte("c"), 0)
	require.NoError(t, err)
	assert.Equal(t, contract.Inserted, out, "an expired entry counts as absent")
	clk.advance(time.Hour)
	v, ok := s.Get("lock")
	require.True(t, ok, "the replacing SetNX set no TTL")
	assert.Equal(t, "c", string(v))
}

func TestSetNXAppliesTTLInTheSameStep(t *testing.T) {
	s, clk := newTestStore(t)
	_, err := s.SetNX("lock", []byte("a"), time.Second)
	require.NoError(t, err)
	clk.advance(time.Second)
	_, ok := s.Get("lock")
	assert.False(t, ok)
}

func TestDel(t *testing.T) {
	s, clk := newTestStore(t)
	assert.False(t, s.Del("k"))
	require.NoError(t, s.Set("k", []byte("v"), time.Second))
	assert.True(t, s.Del("k"))
	assert.False(t, s.Del("k"))

	require.NoError(t, s.Set("k", []byte("v"), time.Second))
	clk.advance(time.Second)
	assert.False(t, s.Del("k"), "an expired entry is not counted")
	assert.Equal(t, 0, s.Len(), "but it is removed")
}

func TestDelIfEq(t *testing.T) {
	s, clk := newTestStore(t)
	assert.False(t, s.DelIfEq("k", []byte("t")), "absent")

	require.NoError(t, s.Set("k", []byte("token"), time.Second))
	assert.False(t, s.DelIfEq("k", []byte("other")))
	assert.False(t, s.DelIfEq("k", []byte("toke")), "a prefix is not equal")
	assert.False(t, s.DelIfEq("k", []byte("token\x00")), "nor a longer value")
	_, ok := s.Get("k")
	require.True(t, ok, "a mismatch deletes nothing")
	assert.True(t, s.DelIfEq("k", []byte("token")))
	_, ok = s.Get("k")
	assert.False(t, ok)

	require.NoError(t, s.Set("k", []byte("token"), time.Second))
	clk.advance(time.Second)
	assert.False(t, s.DelIfEq("k", []byte("token")), "an expired entry never matches")
}

// The scenario of the stale release: A's lock expires, B takes it, A's late
// release must not remove B's lock, so C is refused.
func TestStaleReleaseCannotRemoveTheNewHoldersLock(t *testing.T) {
	s, clk := newTestStore(t)
	out, _ := s.SetNX("lock", []byte("A"), time.Second)
	require.Equal(t, contract.Inserted, out)
	clk.advance(1200 * time.Millisecond)
	out, _ = s.SetNX("lock", []byte("B"), 30*time.Second)
	require.Equal(t, contract.Inserted, out)

	assert.False(t, s.DelIfEq("lock", []byte("A")))
	out, _ = s.SetNX("lock", []byte("C"), 30*time.Second)
	assert.Equal(t, contract.Exists, out)
	v, _ := s.Get("lock")
	assert.Equal(t, "B", string(v))
}

// race releases n goroutines together and returns how many saw f report true.
var race = barrier.Race

func TestSetNXRaceHasExactlyOneWinner(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	const goroutines, rounds = 32, 2000
	for r := 0; r < rounds; r++ {
		key := fmt.Sprintf("lock:%d", r)
		winners := make([]atomic.Bool, goroutines)
		n := race(goroutines, func(i int) bool {
			out, err := s.SetNX(key, []byte(fmt.Sprint(i)), time.Minute)
			if err != nil {
				t.Error(err)
			}
			winners[i].Store(out == contract.Inserted)
			return out == contract.Inserted
		})
		require.Equal(t, 1, n, "round %d", r)
		v, _ := s.Get(key)
		var w int
		fmt.Sscan(string(v), &w)
		require.True(t, winners[w].Load(), "round %d: the stored value is the winner's", r)
	}
}

func TestDelIfEqRaceHasExactlyOneWinner(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	for r := 0; r < 500; r++ {
		require.NoError(t, s.Set("lock", []byte("tok"), time.Minute))
		n := race(32, func(int) bool { return s.DelIfEq("lock", []byte("tok")) })
		require.Equal(t, 1, n, "round %d", r)
	}
}

// Writers and readers on keys about to expire, with the real sweeper: a value
// written after expiry must never be lost to a lazy or active removal.
func TestFreshValueSurvivesConcurrentExpiry(t *testing.T) {
	clk := &fakeClock{}
	s := New(Options{Now: clk.now, SweepInterval: 50 * time.Microsecond})
	defer s.Close()
	for r := 0; r < 300; r++ {
		key := fmt.Sprintf("k%d", r%7)
		require.NoError(t, s.Set(key, []byte("old"), time.Millisecond))
		clk.advance(time.Millisecond)
		race(8, func(i int) bool {
			if i == 0 {
				require.NoError(t, s.Set(key, []byte("fresh"), 0))
			} else {
				s.Get(key)
			}
			return false
		})
		s.Sweep()
		v, ok := s.Get(key)
		require.True(t, ok, "round %d", r)
		require.Equal(t, "fresh", string(v))
	}
}

func (s *Store) shardFor(key string) *shard {
	sh, _, _ := s.locate(key)
	return sh
}

func TestExistsAndPTTL(t *testing.T) {
	s, clk := newTestStore(t)
	assert.False(t, s.Exists("k"))
	_, ok := s.PTTL("k")
	assert.False(t, ok)

	require.NoError(t, s.Set("k", nil, 0))
	assert.True(t, s.Exists("k"))
	ttl, ok := s.PTTL("k")
	assert.True(t, ok)
	assert.Equal(t, time.Duration(-1), ttl, "no expiry")

	require.NoError(t, s.Set("t", []byte("v"), 10*time.Second))
	clk.advance(4 * time.Second)
	ttl, _ = s.PTTL("t")
	assert.Equal(t, 6*time.Second, ttl)
	clk.advance(6 * time.Second)
	assert.False(t, s.Exists("t"))
	_, ok = s.PTTL("t")
	assert.False(t, ok)
}

func TestExpireIfEq(t *testing.T) {
	s, clk := newTestStore(t)
	_, err := s.SetNX("lock", []byte("mine"), time.Second)
	require.NoError(t, err)
	ok, err := s.ExpireIfEq("lock", []byte("theirs"), time.Hour)
	require.NoError(t, err)
	assert.False(t, ok)
	ttl, _ := s.PTTL("lock")
	assert.Equal(t, time.Second, ttl, "a mismatch changes nothing")

	ok, _ = s.ExpireIfEq("lock", []byte("mine"), time.Minute)
	assert.True(t, ok)
	clk.advance(30 * time.Second)
	ttl, _ = s.PTTL("lock")
	assert.Equal(t, 30*time.Second, ttl)

	clk.advance(30 * time.Second)
	ok, _ = s.ExpireIfEq("lock", []byte("mine"), time.Minute)
	assert.False(t, ok, "an expired lock cannot be refreshed")
	_, err = s.ExpireIfEq("lock", []byte("mine"), -1)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
}

func TestFlushWakesWaitersAndEmptiesTheStore(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	for i := 0; i < 1000; i++ {
		require.NoError(t, s.Set(fmt.Sprint(i), []byte("v"), time.Duration(i%2)*time.Hour))
	}
	done := make(chan bool)
	go func() { done <- s.Wait("7", 5*hangCatch) }()
	require.Eventually(t, func() bool {
		sh := s.shardFor("7")
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return sh.waiters["7"] != nil
	}, hangCatch, time.Millisecond)
	s.Flush()
	assert.True(t, <-done)
	assert.Equal(t, 0, s.Len())
	_, ok := s.Get("1")
	assert.False(t, ok)
	require.NoError(t, s.Set("after", []byte("v"), 0))
	assert.Equal(t, 1, s.Len())
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
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	_, err = s.SetGuarded("data", nil, -1, "lock", []byte("tok"))
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)

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
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	_, err = s.Expire("", time.Second)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
}
