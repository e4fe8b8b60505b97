package shm

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/kv"
)

// TestCreditsHeldByOtherShardsDoNotRefuseAWriteThatFits fills the store
// to its limit, frees entries in every shard but one (their bytes become
// those shards' credit), then writes into that one shard what the limit
// allows again: the write takes the other shards' credit back instead of
// being refused.
func TestCreditsHeldByOtherShardsDoNotRefuseAWriteThatFits(t *testing.T) {
	s := openTest(t, kv.MemoryConfig{Limit: 4 << 20})
	require.Greater(t, len(s.shards), 1)
	v := make([]byte, 1000)
	n := 0
	for ; s.Set(fmt.Sprintf("k%d", n), v, 0) == nil; n++ {
	}
	target, _, _ := s.locate("big")
	freed := 0
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("k%d", i)
		if sh, _, _ := s.locate(k); sh != target && freed < 2*len(s.shards)*int(s.g.creditChunk())/1000 {
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
	s := openTest(t, kv.MemoryConfig{Limit: 1 << 20})
	require.NoError(t, s.Set("key", []byte("v"), 0))
	sh, _, _ := s.locate("key")
	require.Greater(t, atomic.LoadInt64(sh.credit()), int64(0), "the insert reserved a chunk")
	atomic.StoreUint32(sh.u32(sLock), deadTag(t, s))
	_, found := get(t, s, "key")
	require.True(t, found)
	assert.Zero(t, atomic.LoadInt64(sh.credit()))
	assert.Equal(t, uint64(1), s.Recoveries())
}
