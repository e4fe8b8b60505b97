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

// A write that eviction cannot make fit fails at once with ErrNoMemory and
// evicts nothing: not when it is larger than the limit, nor when locks
// (never evicted) or, under volatile-lru, keys without a TTL leave too
// little that eviction may take. Every write path decides the same way.
func TestAWriteThatCannotFitEvictsNothing(t *testing.T) {
	v := bytes.Repeat([]byte("c"), 1000)
	tok := []byte("token")
	setups := []struct {
		name   string
		policy contract.Policy
		fill   func(t *testing.T, s *Store)
		big    int // a write of this size cannot fit
		fits   int // one of this size fits once eviction made room
	}{
		{"larger than the limit", contract.AllKeysLRU, func(t *testing.T, s *Store) {
			for i := 0; i < 300; i++ {
				require.NoError(t, s.Set(fmt.Sprintf("c:%03d", i), v, 0))
			}
		}, 2 << 20, 800 << 10},
		{"locks leave too little to evict", contract.AllKeysLRU, func(t *testing.T, s *Store) {
			for i := 0; i < 750; i++ {
				_, err := s.SetNX(fmt.Sprintf("lock:%03d", i), v, time.Hour)
				require.NoError(t, err)
			}
			for i := 0; i < 200; i++ {
				require.NoError(t, s.Set(fmt.Sprintf("c:%03d", i), v, 0))
			}
		}, 300 << 10, 200 << 10},
		{"volatile-lru keeps keys without a TTL", contract.VolatileLRU, func(t *testing.T, s *Store) {
			for i := 0; i < 500; i++ {
				require.NoError(t, s.Set(fmt.Sprintf("p:%03d", i), v, 0))
			}
			for i := 0; i < 200; i++ {
				require.NoError(t, s.Set(fmt.Sprintf("t:%03d", i), v, time.Hour))
			}
		}, 600 << 10, 400 << 10},
	}
	writes := []struct {
		name  string
		write func(s *Store, value []byte) error
	}{
		{"Set", func(s *Store, value []byte) error { return s.Set("big", value, time.Hour) }},
		{"SetNX", func(s *Store, value []byte) error { _, err := s.SetNX("big", value, time.Hour); return err }},
		{"SetGuarded", func(s *Store, value []byte) error {
			ok, err := s.SetGuarded("big", value, time.Hour, "guard", tok)
			if err == nil && !ok {
				return fmt.Errorf("the guard did not match")
			}
			return err
		}},
	}
	for _, su := range setups {
		for _, w := range writes {
			t.Run(su.name+"/"+w.name, func(t *testing.T) {
				s, _ := newTestStore(t)
				require.NoError(t, s.Configure(contract.MemoryConfig{Limit: 1 << 20, Policy: su.policy}))
				_, err := s.SetNX("guard", tok, 0)
				require.NoError(t, err)
				su.fill(t, s)
				before := s.Stats()
				require.Zero(t, before.Evictions)

				err = w.write(s, bytes.Repeat([]byte("B"), su.big))
				require.ErrorIs(t, err, contract.ErrNoMemory)
				after := s.Stats()
				assert.Zero(t, after.Evictions, "a write that cannot fit evicted entries")
				assert.Equal(t, before.Keys, after.Keys)
				assert.Equal(t, before.BytesUsed, after.BytesUsed)
				assert.False(t, s.Exists("big"))

				require.NoError(t, w.write(s, bytes.Repeat([]byte("F"), su.fits)), "a write eviction can make fit")
				assert.NotZero(t, s.Stats().Evictions)
				assert.LessOrEqual(t, s.Stats().BytesUsed, int64(1<<20))
			})
		}
	}
}

// IncrBy decides as the other writes do: a counter that cannot fit evicts
// nothing, even when a smaller entry could be evicted.
func TestAnIncrByThatCannotFitEvictsNothing(t *testing.T) {
	s, _ := newTestStore(t)
	require.NoError(t, s.Configure(contract.MemoryConfig{Limit: cost("lock", []byte("t")) + cost("c", nil), Policy: contract.AllKeysLRU}))
	_, err := s.SetNX("lock", []byte("t"), time.Hour)
	require.NoError(t, err)
	require.NoError(t, s.Set("c", nil, 0))
	require.Greater(t, cost("n", []byte("1")), cost("c", nil))

	_, err = s.IncrBy("n", 1, 0)
	require.ErrorIs(t, err, contract.ErrNoMemory)
	assert.True(t, s.Exists("c"), "evicted for a counter that could not fit")
	assert.Zero(t, s.Stats().Evictions)
}

func TestNoEvictionFailsAndKeepsTheOldValue(t *testing.T) {
	s, _ := newTestStore(t)
	v := bytes.Repeat([]byte("v"), 100)
	require.NoError(t, s.Configure(contract.MemoryConfig{Limit: 3 * cost("k0", v), Policy: contract.NoEviction}))
	for i := 0; i < 3; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("k%d", i), v, 0))
	}
	assert.ErrorIs(t, s.Set("k3", v, 0), contract.ErrNoMemory)
	_, err := s.SetNX("k3", v, 0)
	assert.ErrorIs(t, err, contract.ErrNoMemory)
	_, ok := s.Get("k3")
	assert.False(t, ok)

	// An overwrite that grows past the limit fails and keeps the old value;
	// one of the same size fits, since it frees what it replaces.
	assert.ErrorIs(t, s.Set("k0", append(v, 'x'), 0), contract.ErrNoMemory)
	got, _ := s.Get("k0")
	assert.Equal(t, v, got)
	assert.NoError(t, s.Set("k0", bytes.Repeat([]byte("w"), 100), 0))
	assert.Equal(t, uint64(0), s.Stats().Evictions)
}

func TestAllKeysLRUEvictsColdKeysFirst(t *testing.T) {
	s, _ := newTestStore(t)
	v := bytes.Repeat([]byte("v"), 100)
	const n = 1000
	require.NoError(t, s.Configure(contract.MemoryConfig{Limit: n * cost("k0000", v), Policy: contract.AllKeysLRU}))
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
	require.NoError(t, s.Configure(contract.MemoryConfig{Limit: 10 * cost("p0", v), Policy: contract.VolatileLRU}))
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
	assert.ErrorIs(t, s.Set("n5", v, 0), contract.ErrNoMemory)
}

func TestLocksAndPinnedPrefixesAreNeverEvicted(t *testing.T) {
	clk := &fakeClock{}
	s := New(Options{Now: clk.now, SweepInterval: -1, PinnedPrefixes: []string{"session:"}})
	defer s.Close()
	v := bytes.Repeat([]byte("v"), 100)
	require.NoError(t, s.Configure(contract.MemoryConfig{Limit: 3*cost("lock:0", v) + 3*cost("session:0", v), Policy: contract.AllKeysLRU}))
	for i := 0; i < 3; i++ {
		out, err := s.SetNX(fmt.Sprintf("lock:%d", i), v, time.Hour)
		require.NoError(t, err)
		require.Equal(t, contract.Inserted, out)
		require.NoError(t, s.Set(fmt.Sprintf("session:%d", i), v, time.Hour))
	}
	err := s.Set("cache:x", v, 0)
	assert.ErrorIs(t, err, contract.ErrNoMemory, "only locks and sessions: nothing may go")
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
	require.NoError(t, s.Configure(contract.MemoryConfig{Limit: cost("k", v), Policy: contract.AllKeysLRU}))
	require.NoError(t, s.Set("k", v, 0))
	assert.ErrorIs(t, s.Set("k", append(v, v...), 0), contract.ErrNoMemory)
	got, ok := s.Get("k")
	require.True(t, ok)
	assert.Equal(t, v, got)
}

func TestExpiredEntriesGoBeforeLiveOnes(t *testing.T) {
	s, clk := newTestStore(t)
	v := bytes.Repeat([]byte("v"), 100)
	require.NoError(t, s.Configure(contract.MemoryConfig{Limit: 4 * cost("k0", v), Policy: contract.AllKeysLRU}))
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
