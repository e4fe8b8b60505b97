package shm

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

// The rate ring lives in the segment: every process's counts land in it,
// and any process reads the same ring.
func TestTheRateRingIsTheSegments(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{})
	other, err := Open(testName(t), Options{Existing: true})
	require.NoError(t, err)
	defer other.Close()

	iv := int64(contract.RateInterval)
	now := (expiryNow()/iv + 1) * iv // an interval of its own, ahead
	s.rateRing().Tick(now, s.rateTotals)
	require.NoError(t, s.Set("a", []byte("v"), 0))
	_, _, err = other.GetInto("a", nil)
	require.NoError(t, err)
	_, _, err = other.GetInto("b", nil)
	require.NoError(t, err)
	other.rateRing().Tick(now+iv, other.rateTotals)
	got := s.rateRing().Read(now + iv)
	require.NotEmpty(t, got)
	assert.Equal(t, contract.RateCounts{Hits: 1, Misses: 1, Sets: 1}, got[0])
}

func TestStatsSayEachShardsHeap(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 4 << 20})
	for i := 0; i < 100; i++ {
		require.NoError(t, s.Set(string(rune('a'+i%26))+strings.Repeat("k", i), make([]byte, 1000), 0))
	}
	st, err := s.Stats()
	require.NoError(t, err)
	require.Len(t, st.Shards, s.g.shards)
	var keys, used int64
	for _, sh := range st.Shards {
		keys += sh.Keys
		used += sh.BytesUsed
		assert.Equal(t, s.g.heapSize, sh.HeapSize)
		assert.Greater(t, sh.HeapFree, int64(0))
		assert.LessOrEqual(t, sh.LargestFree, sh.HeapFree)
		assert.Greater(t, sh.LargestFree, int64(0))
	}
	assert.Equal(t, st.Keys, keys)
	assert.Equal(t, st.BytesUsed, used)
	assert.Contains(t, st.Facts, s.Path())
	assert.Equal(t, contract.RateInterval, st.RateInterval)
}
