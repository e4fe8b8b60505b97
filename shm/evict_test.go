package shm

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

func TestNoEvictionFailsAndKeepsTheOldValue(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	value := make([]byte, 4<<10)
	var err error
	n := 0
	for ; n < 1000 && err == nil; n++ {
		err = s.Set(fmt.Sprintf("k%d", n), value, 0)
	}
	require.ErrorIs(t, err, contract.ErrNoMemory)
	require.NoError(t, s.Set("small", []byte("old"), 0))
	err = s.Set("small", make([]byte, 64<<10), 0)
	require.ErrorIs(t, err, contract.ErrNoMemory)
	v, found := get(t, s, "small")
	assert.True(t, found)
	assert.Equal(t, "old", v, "a refused write keeps the old value")
	st, _ := s.Stats()
	assert.Zero(t, st.Evictions)
	assert.LessOrEqual(t, st.BytesUsed, st.MemoryLimit)
	assert.Greater(t, st.BytesUsed, st.MemoryLimit*3/4, "a full store: writes were refused at the limit, not at a shard")
}

func TestLRUEvictsButNeverLocksOrPinned(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20, Policy: contract.AllKeysLRU}, "pin:")
	for i := 0; i < 20; i++ {
		out, err := s.SetNX(fmt.Sprintf("lock%d", i), []byte("tok"), 0)
		require.NoError(t, err)
		require.Equal(t, contract.Inserted, out)
		require.NoError(t, s.Set(fmt.Sprintf("pin:%d", i), []byte("p"), 0))
	}
	value := make([]byte, 4<<10)
	for i := 0; i < 2000; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("k%d", i), value, 0), "write %d", i)
	}
	for i := 0; i < 20; i++ {
		_, found := get(t, s, fmt.Sprintf("lock%d", i))
		assert.True(t, found, "lock %d evicted", i)
		_, found = get(t, s, fmt.Sprintf("pin:%d", i))
		assert.True(t, found, "pinned %d evicted", i)
	}
	_, found := get(t, s, "k1999")
	assert.True(t, found, "the last write is there")
	st, _ := s.Stats()
	assert.Greater(t, st.Evictions, uint64(1500))
	assert.LessOrEqual(t, st.BytesUsed, st.MemoryLimit)
}

func TestVolatileLRUEvictsOnlyEntriesWithATTL(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20, Policy: contract.VolatileLRU})
	value := make([]byte, 4<<10)
	for i := 0; i < 100; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("keep%d", i), value, 0))
	}
	for i := 0; i < 500; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("ttl%d", i), value, time.Hour), "write %d", i)
	}
	for i := 0; i < 100; i++ {
		_, found := get(t, s, fmt.Sprintf("keep%d", i))
		require.True(t, found, "keep%d evicted", i)
	}
}

func TestAWriteEvictionCannotFitFailsAtOnceAndEvictsNothing(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20, Policy: contract.AllKeysLRU}, "pin:")
	value := make([]byte, 4<<10)
	var err error
	for i := 0; err == nil; i++ {
		err = s.Set(fmt.Sprintf("pin:%d", i), value, 0)
	}
	require.ErrorIs(t, err, contract.ErrNoMemory)
	require.NoError(t, s.Set("cold", []byte("c"), 0))
	before, _ := s.Stats()
	// Evicting "cold" (all there is to evict) cannot make room for 4 KiB.
	err = s.Set("big", value, 0)
	require.ErrorIs(t, err, contract.ErrNoMemory)
	after, _ := s.Stats()
	assert.Equal(t, before.Evictions, after.Evictions, "nothing evicted")
	_, found := get(t, s, "cold")
	assert.True(t, found)
}
