package memstore

import (
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	assert.Eventually(t, func() bool { return s.Len() == 0 }, hangCatch, time.Millisecond)
}
