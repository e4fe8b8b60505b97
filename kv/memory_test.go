package kv

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestNoEvictionFailsAndKeepsTheOldValue(t *testing.T) {
	s, _ := newTestStore(t)
	v := bytes.Repeat([]byte("v"), 100)
	require.NoError(t, s.Configure(MemoryConfig{Limit: 3 * cost("k0", v), Policy: NoEviction}))
	for i := 0; i < 3; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("k%d", i), v, 0))
	}
	assert.ErrorIs(t, s.Set("k3", v, 0), ErrNoMemory)
	_, err := s.SetNX("k3", v, 0)
	assert.ErrorIs(t, err, ErrNoMemory)
	_, ok := s.Get("k3")
	assert.False(t, ok)

	// An overwrite that grows past the limit fails and keeps the old value;
	// one of the same size fits, since it frees what it replaces.
	assert.ErrorIs(t, s.Set("k0", append(v, 'x'), 0), ErrNoMemory)
	got, _ := s.Get("k0")
	assert.Equal(t, v, got)
	assert.NoError(t, s.Set("k0", bytes.Repeat([]byte("w"), 100), 0))
	assert.Equal(t, uint64(0), s.Stats().Evictions)
}

func TestAllKeysLRUEvictsColdKeysFirst(t *testing.T) {
	s, _ := newTestStore(t)
	v := bytes.Repeat([]byte("v"), 100)
	const n = 1000
	require.NoError(t, s.Configure(MemoryConfig{Limit: n * cost("k0000", v), Policy: AllKeysLRU}))
	for i := 0; i < n; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("k%04d", i), v, 0))
	}
	// 5% of the keys are read after the LRU clock moved on.
	s.lru.Store(1000)
	for i := 0; i < n; i += 20 {
		s.Get(fmt.Sprintf("k%04d", i))
	}
	for i := 0; i < n/2; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("new%04d", i), v, 0))
	}
	st := s.Stats()
	assert.LessOrEqual(t, st.BytesUsed, st.MemoryLimit)
	assert.GreaterOrEqual(t, st.Evictions, uint64(n/2))
	for i := 0; i < n; i += 20 {
		_, ok := s.Get(fmt.Sprintf("k%04d", i))
		assert.True(t, ok, "hot key k%04d evicted", i)
	}
}

func TestVolatileLRUEvictsOnlyKeysWithATTL(t *testing.T) {
	s, _ := newTestStore(t)
	v := bytes.Repeat([]byte("v"), 100)
	require.NoError(t, s.Configure(MemoryConfig{Limit: 10 * cost("p0", v), Policy: VolatileLRU}))
	for i := 0; i < 5; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("p%d", i), v, 0))         // persistent
		require.NoError(t, s.Set(fmt.Sprintf("t%d", i), v, time.Hour)) // volatile
	}
	for i := 0; i < 5; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("n%d", i), v, 0))
	}
	for i := 0; i < 5; i++ {
		_, ok := s.Get(fmt.Sprintf("p%d", i))
		assert.True(t, ok, "a key without TTL is never evicted under volatile-lru")
		_, ok = s.Get(fmt.Sprintf("t%d", i))
		assert.False(t, ok)
	}
	// Nothing volatile is left: the next write cannot make room.
	assert.ErrorIs(t, s.Set("n5", v, 0), ErrNoMemory)
}

func TestLocksAndPinnedPrefixesAreNeverEvicted(t *testing.T) {
	clk := &fakeClock{}
	s := New(Options{Now: clk.now, SweepInterval: -1, PinnedPrefixes: []string{"session:"}})
	defer s.Close()
	v := bytes.Repeat([]byte("v"), 100)
	require.NoError(t, s.Configure(MemoryConfig{Limit: 3*cost("lock:0", v) + 3*cost("session:0", v), Policy: AllKeysLRU}))
	for i := 0; i < 3; i++ {
		out, err := s.SetNX(fmt.Sprintf("lock:%d", i), v, time.Hour)
		require.NoError(t, err)
		require.Equal(t, Inserted, out)
		require.NoError(t, s.Set(fmt.Sprintf("session:%d", i), v, time.Hour))
	}
	err := s.Set("cache:x", v, 0)
	assert.ErrorIs(t, err, ErrNoMemory, "only locks and sessions: nothing may go")
	for i := 0; i < 3; i++ {
		_, ok := s.Get(fmt.Sprintf("lock:%d", i))
		assert.True(t, ok)
		_, ok = s.Get(fmt.Sprintf("session:%d", i))
		assert.True(t, ok)
	}
	// A Set over a lock key makes it an ordinary entry again.
	require.NoError(t, s.Set("lock:0", v, 0))
	require.NoError(t, s.Set("cache:", v, 0)) // as long as lock:0, so one eviction makes room
	_, ok := s.Get("lock:0")
	assert.False(t, ok, "lock:0 was a plain entry and the only one that could go")
}

func TestAWriteNeverEvictsItsOwnOldValue(t *testing.T) {
	s, _ := newTestStore(t)
	v := bytes.Repeat([]byte("v"), 100)
	require.NoError(t, s.Configure(MemoryConfig{Limit: cost("k", v), Policy: AllKeysLRU}))
	require.NoError(t, s.Set("k", v, 0))
	assert.ErrorIs(t, s.Set("k", append(v, v...), 0), ErrNoMemory)
	got, ok := s.Get("k")
	require.True(t, ok)
	assert.Equal(t, v, got)
}

func TestExpiredEntriesGoBeforeLiveOnes(t *testing.T) {
	s, clk := newTestStore(t)
	v := bytes.Repeat([]byte("v"), 100)
	require.NoError(t, s.Configure(MemoryConfig{Limit: 4 * cost("k0", v), Policy: AllKeysLRU}))
	require.NoError(t, s.Set("k0", v, time.Second))
	require.NoError(t, s.Set("k1", v, time.Second))
	require.NoError(t, s.Set("k2", v, 0))
	require.NoError(t, s.Set("k3", v, 0))
	clk.advance(time.Second)
	require.NoError(t, s.Set("k4", v, 0))
	require.NoError(t, s.Set("k5", v, 0))
	st := s.Stats()
	assert.Equal(t, uint64(0), st.Evictions)
	assert.Equal(t, uint64(2), st.Expirations)
}

func TestConfigureRejectsBadSettings(t *testing.T) {
	s, _ := newTestStore(t)
	assert.ErrorIs(t, s.Configure(MemoryConfig{Limit: -1}), ErrInvalidArgument)
	assert.ErrorIs(t, s.Configure(MemoryConfig{Policy: 7}), ErrInvalidArgument)
	assert.ErrorIs(t, s.Configure(MemoryConfig{CompressionMinSize: -1}), ErrInvalidArgument)
	for _, name := range []string{"noeviction", "volatile-lru", "allkeys-lru"} {
		p, err := ParsePolicy(name)
		require.NoError(t, err)
		assert.Equal(t, name, p.String())
	}
	_, err := ParsePolicy("lfu")
	assert.ErrorIs(t, err, ErrInvalidArgument)
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
	require.NoError(t, s.Configure(MemoryConfig{Limit: limit}))
	for _, k := range keys {
		require.NoError(t, s.Set(k, []byte("x"), 0))
	}
	require.NoError(t, s.Set("last", v, 0), "exactly what is left fits")
	assert.Equal(t, limit, s.Stats().BytesUsed)
	assert.ErrorIs(t, s.Set("one-more", []byte("z"), 0), ErrNoMemory)
}
