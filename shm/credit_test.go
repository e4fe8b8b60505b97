package shm

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

// TestCreditsHeldByOtherShardsDoNotRefuseAWriteThatFits fills the store
// to its limit, frees entries in every shard but one (their bytes become
// those shards' credit), then writes into that one shard what the limit
// allows again: the write takes the other shards' credit back instead of
// being refused.
func TestCreditsHeldByOtherShardsDoNotRefuseAWriteThatFits(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 4 << 20})
	require.Greater(t, len(s.shards), 1)
	v := make([]byte, 1000)
	n := 0
	for ; s.Set(fmt.Sprintf("k%d", n), v, 0) == nil; n++ {
	}
	target, _, _ := s.locate("big")
	freed := 0
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("k%d", i)
		if sh, _, _ := s.locate(k); sh != target && freed < 2*len(s.shards)*int(s.g.chunk)/1000 {
			_, err := s.Del(k)
			require.NoError(t, err)
			freed++
		}
	}
	var credit int64
	for i := range s.shards {
		credit += atomic.LoadInt64(s.shards[i].credit())
	}
	st, _ := s.Stats()
	free := st.MemoryLimit - st.BytesUsed
	require.Greater(t, credit, free/2, "the freed bytes are the other shards' credit")
	require.NoError(t, s.Set("big", make([]byte, free*3/4), 0), "a write that fits the limit (%d free, %d held as credit)", free, credit)
	require.NoError(t, s.Check())
}

// TestRecoveryReturnsADeadProcesssCredit: a shard's credit whose owner died
// is set back to 0 by the recovery, so it is not held for ever.
func TestRecoveryReturnsADeadProcesssCredit(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	require.NoError(t, s.Set("key", []byte("v"), 0))
	sh, _, _ := s.locate("key")
	require.Greater(t, atomic.LoadInt64(sh.credit()), int64(0), "the insert reserved a chunk")
	atomic.StoreUint32(sh.u32(sLock), deadTag(t, s))
	_, found := get(t, s, "key")
	require.True(t, found)
	assert.Zero(t, atomic.LoadInt64(sh.credit()))
	assert.Equal(t, uint64(1), s.Recoveries())
}

// TestFreeBytesInPiecesAreGathered fills a shard, frees every other entry
// (holes of 4 KiB), fills the rest of its heap with one value, and writes
// a value of 64 KiB: no free block holds it, the free bytes do, and the
// write succeeds without evicting anything.
func TestFreeBytesInPiecesAreGathered(t *testing.T) {
	// Several shards: the one filled reaches its heap's end, not the limit.
	s := openTest(t, contract.MemoryConfig{Limit: 4 << 20, Policy: contract.NoEviction})
	require.Greater(t, len(s.shards), 1)
	target, _, _ := s.locate("big")
	var keys []string
	for i := 0; ; i++ {
		k := fmt.Sprintf("k%d", i)
		if sh, _, _ := s.locate(k); sh != target {
			continue
		}
		if s.Set(k, make([]byte, 4<<10), 0) != nil {
			break
		}
		keys = append(keys, k)
	}
	for i := 0; i < len(keys); i += 2 {
		_, err := s.Del(keys[i])
		require.NoError(t, err)
	}
	// The rest of the heap, one value in the largest free block.
	var largest int64
	for b := int64(0); b < s.g.heapSize; b += target.blockSize(b) {
		if target.blockState(b) == stateFree {
			largest = max(largest, target.blockSize(b))
		}
	}
	for i := 0; ; i++ {
		if k := fmt.Sprintf("tail%d", i); s.shardOf(k) == target {
			require.NoError(t, s.Set(k, make([]byte, largest-entrySize(len(k), 0)), 0))
			break
		}
	}
	require.NoError(t, s.SetMemoryConfig(contract.MemoryConfig{Policy: contract.AllKeysLRU}))
	before, _ := s.Stats()
	require.False(t, s.shardHasRoom(target, heapFull, entrySize(3, 64<<10)), "no free block holds it")
	require.NoError(t, s.Set("big", make([]byte, 64<<10), 0))
	after, _ := s.Stats()
	assert.Equal(t, before.Evictions, after.Evictions, "nothing was evicted")
	assert.Equal(t, before.Keys+1, after.Keys)
	for i := 1; i < len(keys); i += 2 {
		if _, found := get(t, s, keys[i]); !found {
			t.Errorf("%s lost", keys[i])
		}
	}
	require.NoError(t, s.Check())
}

func (s *Store) shardOf(key string) *shard { sh, _, _ := s.locate(key); return sh }

// TestChurnAtNinetyPercentKeepsCapacity churns mixed sizes (64 B-64 KiB)
// in a store held about 90 % full (noeviction: what is refused is
// refused, not made room for). What the store holds never falls below 80 %
// of the limit once filled. Each key has one shard, and a shard's free
// bytes can be too few, or too scattered to gather, for a large value
// while other shards have room: those refusals are counted and must stay
// under 2 % of the writes.
func TestChurnAtNinetyPercentKeepsCapacity(t *testing.T) {
	const limit = 16 << 20
	s := openTest(t, contract.MemoryConfig{Limit: limit, Policy: contract.NoEviction})
	st := churn(t, s, 20000)
	t.Logf("%+v", st)
	assert.Less(t, st.refusedFragmented+st.refusedShardFull, st.writes/50, "too many writes refused for their shard")
	assert.GreaterOrEqual(t, st.lowest, int64(limit*8/10), "usable capacity fell below 80 %")
	require.NoError(t, s.Check())
}

type churnStats struct {
	writes, refusedFragmented, refusedShardFull, refusedLimit int
	lowest                                                    int64 // bytes used, the least after a write once filled
}

// churn fills s to 90 % of its limit with values of 64 B-64 KiB, then
// writes new keys and deletes random ones to stay about there, rounds
// times, classifying every refused write.
func churn(t testing.TB, s *Store, rounds int) churnStats {
	limit := s.g.limit
	sizes := func() int {
		if rand.IntN(4) == 0 {
			return 64 << 10 * (1 + rand.IntN(4)) / 4
		}
		return 64 + rand.IntN(4<<10)
	}
	used := func() int64 { st, _ := s.Stats(); return st.BytesUsed }
	var keys []string
	next := 0
	st := churnStats{lowest: limit}
	filled := false
	for round := 0; round < rounds || !filled; round++ {
		if u := used(); u > limit*9/10 {
			filled = true
			i := rand.IntN(len(keys))
			_, err := s.Del(keys[i])
			require.NoError(t, err)
			keys[i] = keys[len(keys)-1]
			keys = keys[:len(keys)-1]
			continue
		}
		size := sizes()
		k := fmt.Sprintf("k%d", next)
		next++
		need := entrySize(len(k), size)
		sh, _, _ := s.locate(k)
		shardFree := s.g.heapSize - atomic.LoadInt64(sh.i64(sHeapUsed))
		before := used()
		err := s.Set(k, make([]byte, size), 0)
		if filled {
			st.writes++
		}
		if err != nil {
			require.ErrorIs(t, err, contract.ErrNoMemory)
			switch {
			case before+chargeOf(need) > limit:
				st.refusedLimit++
			case shardFree >= need:
				st.refusedFragmented++
			default:
				st.refusedShardFull++
			}
			continue
		}
		keys = append(keys, k)
		if filled {
			st.lowest = min(st.lowest, used())
		}
	}
	return st
}
