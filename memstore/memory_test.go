package memstore

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

func cost(key string, value []byte) int64 {
	return int64(valueOffset(len(key))+len(value)) + entryOverhead
}

func TestMemoryAccounting(t *testing.T) {
	s, _ := newTestStore(t)
	require.NoError(t, s.Set("a", []byte("12345"), 0))
	require.NoError(t, s.Set("bb", nil, time.Second))
	assert.Equal(t, cost("a", []byte("12345"))+cost("bb", nil), s.Stats().BytesUsed)
	require.NoError(t, s.Set("a", []byte("1"), 0))
	assert.Equal(t, cost("a", []byte("1"))+cost("bb", nil), s.Stats().BytesUsed)
	s.Del("a")
	s.Del("bb")
	assert.Equal(t, int64(0), s.Stats().BytesUsed)
	require.NoError(t, s.Set("c", []byte("x"), 0))
	s.Flush()
	assert.Equal(t, int64(0), s.Stats().BytesUsed)
	assert.Equal(t, 0, s.Len())
}

func TestConfigureRejectsBadSettings(t *testing.T) {
	s, _ := newTestStore(t)
	assert.ErrorIs(t, s.Configure(contract.MemoryConfig{Limit: -1}), contract.ErrInvalidArgument)
	assert.ErrorIs(t, s.Configure(contract.MemoryConfig{Policy: 7}), contract.ErrInvalidArgument)
	assert.ErrorIs(t, s.Configure(contract.MemoryConfig{CompressionMinSize: -1}), contract.ErrInvalidArgument)
	for _, name := range []string{"noeviction", "volatile-lru", "allkeys-lru"} {
		p, err := contract.ParsePolicy(name)
		require.NoError(t, err)
		assert.Equal(t, name, p.String())
	}
	_, err := contract.ParsePolicy("lfu")
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
}

// The credit shards hold never makes a write that fits look full: the
// small writes below leave many shards holding spare credit, and a write
// needing all that is left still fits.
func TestShardCreditNeverFailsAWriteThatFits(t *testing.T) {
	s, _ := newTestStore(t)
	var keys []string
	for i := 0; len(keys) < 2*numShards; i++ {
		keys = append(keys, fmt.Sprintf("k%d", i))
	}
	v := bytes.Repeat([]byte("v"), 100_000)
	limit := cost("last", v)
	for _, k := range keys {
		limit += cost(k, []byte("x"))
	}
	require.NoError(t, s.Configure(contract.MemoryConfig{Limit: limit}))
	for _, k := range keys {
		require.NoError(t, s.Set(k, []byte("x"), 0))
	}
	require.NoError(t, s.Set("last", v, 0), "exactly what is left fits")
	assert.Equal(t, limit, s.Stats().BytesUsed)
	assert.ErrorIs(t, s.Set("one-more", []byte("z"), 0), contract.ErrNoMemory)
}
