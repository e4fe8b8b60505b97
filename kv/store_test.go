package kv

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	long := strings.Repeat("x", MaxKeyLen+1)

	cases := []struct {
		name string
		key  string
		ttl  time.Duration
	}{
		{"empty key", "", 0},
		{"long key", long, 0},
		{"negative ttl", "k", -time.Second},
		{"ttl over max", "k", MaxTTL + time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.ErrorIs(t, s.Set(c.key, []byte("new"), c.ttl), ErrInvalidArgument)
			_, err := s.SetNX(c.key, []byte("new"), c.ttl)
			assert.ErrorIs(t, err, ErrInvalidArgument)
			v, _ := s.Get("k")
			assert.Equal(t, "old", string(v))
		})
	}
	assert.NoError(t, s.Set(strings.Repeat("x", MaxKeyLen), nil, MaxTTL), "limits are inclusive")
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
	assert.Equal(t, Inserted, out)

	out, err = s.SetNX("lock", []byte("b"), time.Second)
	require.NoError(t, err)
	assert.Equal(t, Exists, out)
	v, _ := s.Get("lock")
	assert.Equal(t, "a", string(v), "a losing SetNX changes nothing")

	clk.advance(time.Second)
	out, err = s.SetNX("lock", []byte("c"), 0)
	require.NoError(t, err)
	assert.Equal(t, Inserted, out, "an expired entry counts as absent")
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
	require.Equal(t, Inserted, out)
	clk.advance(1200 * time.Millisecond)
	out, _ = s.SetNX("lock", []byte("B"), 30*time.Second)
	require.Equal(t, Inserted, out)

	assert.False(t, s.DelIfEq("lock", []byte("A")))
	out, _ = s.SetNX("lock", []byte("C"), 30*time.Second)
	assert.Equal(t, Exists, out)
	v, _ := s.Get("lock")
	assert.Equal(t, "B", string(v))
}

func TestSweepRemovesOnlyWhatIsStillExpired(t *testing.T) {
	s, clk := newTestStore(t)
	require.NoError(t, s.Set("gone", []byte("v"), time.Second))
	require.NoError(t, s.Set("rewritten", []byte("old"), time.Second))
	require.NoError(t, s.Set("extended", []byte("old"), time.Second))
	require.NoError(t, s.Set("forever", []byte("v"), 0))
	clk.advance(time.Second)
	// Written after the first TTL passed but before any sweep: the heap
	// still holds the old due times for these keys.
	require.NoError(t, s.Set("rewritten", []byte("new"), 0))
	require.NoError(t, s.Set("extended", []byte("new"), time.Minute))

	assert.Equal(t, 1, s.Sweep())
	for _, k := range []string{"rewritten", "extended", "forever"} {
		v, ok := s.Get(k)
		assert.True(t, ok, k)
		if k != "forever" {
			assert.Equal(t, "new", string(v), k)
		}
	}
	clk.advance(time.Minute)
	assert.Equal(t, 1, s.Sweep())
	assert.Equal(t, 2, s.Len())
}

func TestSweepRemovesLargeBatches(t *testing.T) {
	s, clk := newTestStore(t)
	const n = 10 * sweepBatch * numShards / 8
	for i := 0; i < n; i++ {
		require.NoError(t, s.Set(fmt.Sprint(i), nil, time.Second))
	}
	clk.advance(time.Second)
	assert.Equal(t, n, s.Sweep())
	assert.Equal(t, 0, s.Len())
}

func TestExpiryHeapStaysBounded(t *testing.T) {
	s, _ := newTestStore(t)
	for i := 0; i < 100_000; i++ {
		require.NoError(t, s.Set("hot", []byte("v"), time.Hour))
	}
	sh := s.shardFor("hot")
	assert.LessOrEqual(t, len(sh.expiries), 2*sh.volatile+len(sh.t.hashes)/4+64+1)
	assert.Equal(t, 1, sh.volatile)
}

// removeExpired must find every expired entry with the hash even when a
// removal shrinks the table (which moves every slot). Entries are placed
// around one home slot of a table at the shrink edge, a few with the same
// hash and due time; one sweep must leave none of those behind (it once
// lost its place after a shrink, and a shared heap item taken back by the
// first removal left the others stranded).
func TestSweepFindsEveryEntryOfAHashWhileTheTableShrinks(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const size = 128
	const m = uint32(size - 1)
	for trial := 0; trial < 3000; trial++ {
		s, clk := newTestStore(t)
		sh := &s.shards[0]
		sh.t.resize(size)
		h := uint32(rng.Intn(1<<20))*size + uint32(rng.Intn(size)) | 1
		group := 2 + rng.Intn(2)
		used := map[uint32]bool{h: true}
		for j, slot := range rng.Perm(size / 8) {
			hh, at := h, int64(time.Second)
			if slot >= group {
				at = 0
				for used[hh] {
					home := (h&m + uint32(rng.Intn(9)) - 4) & m
					hh = uint32(rng.Intn(1<<20))*size + home
				}
				used[hh] = true
			}
			b, _ := newBlock("k"+strconv.Itoa(j), 1, 0, at, 0)
			sh.t.add(hh, b)
			sh.noteExpiry(at, hh, true)
		}
		clk.advance(2 * time.Second)
		require.Equal(t, group, s.Sweep(), "trial %d", trial)
		require.Negative(t, sh.t.nextWithHash(h, -1), "trial %d: an expired entry was left", trial)
	}
}

// A lock taken and released, or refreshed, takes its heap item back: the
// heap does not grow, so no compaction has to scan the shard's table.
func TestLockPairLeavesNoExpiryItem(t *testing.T) {
	s, clk := newTestStore(t)
	tok := []byte("token")
	sh := s.shardFor("lock")
	for i := 0; i < 1000; i++ {
		out, err := s.SetNX("lock", tok, time.Second)
		require.NoError(t, err)
		require.Equal(t, Inserted, out)
		ok, err := s.ExpireIfEq("lock", tok, time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		require.Len(t, sh.expiries, 1)
		require.True(t, s.DelIfEq("lock", tok))
		require.Empty(t, sh.expiries, "round %d", i)
		clk.advance(time.Millisecond)
	}
}

// Taking back the last heap item must not strand another entry: two keys
// with the same hash in one shard and the same due time share the item's
// identity, and the one left must still be swept.
func TestSharedExpiryItemStillSwept(t *testing.T) {
	s, clk := newTestStore(t)
	a, b := collidingKeys(s)
	require.NoError(t, s.Set(a, []byte("a"), time.Second))
	require.NoError(t, s.Set(b, []byte("b"), time.Second))
	require.True(t, s.Del(a))
	clk.advance(time.Second)
	assert.Equal(t, 1, s.Sweep())
	assert.Equal(t, 0, s.Len())
}

// collidingKeys finds two keys that land in one shard with the same 32-bit
// table hash (a birthday search over about 2^20 keys).
func collidingKeys(s *Store) (string, string) {
	type place struct {
		sh *shard
		h  uint32
	}
	seen := map[place]string{}
	for i := 0; ; i++ {
		k := strconv.Itoa(i)
		sh, h, _ := s.locate(k)
		if other, ok := seen[place{sh, h}]; ok {
			return other, k
		}
		seen[place{sh, h}] = k
	}
}

func TestBackgroundSweeperRuns(t *testing.T) {
	clk := &fakeClock{}
	s := New(Options{Now: clk.now, SweepInterval: time.Millisecond})
	defer s.Close()
	require.NoError(t, s.Set("k", []byte("v"), time.Second))
	clk.advance(time.Second)
	// Nobody reads the key: only the sweeper can remove it.
	assert.Eventually(t, func() bool { return s.Len() == 0 }, 5*time.Second, time.Millisecond)
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
			winners[i].Store(out == Inserted)
			return out == Inserted
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
