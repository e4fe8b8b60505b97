package kv

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		policy Policy
		fill   func(t *testing.T, s *Store)
		big    int // a write of this size cannot fit
		fits   int // one of this size fits once eviction made room
	}{
		{"larger than the limit", AllKeysLRU, func(t *testing.T, s *Store) {
			for i := 0; i < 300; i++ {
				require.NoError(t, s.Set(fmt.Sprintf("c:%03d", i), v, 0))
			}
		}, 2 << 20, 800 << 10},
		{"locks leave too little to evict", AllKeysLRU, func(t *testing.T, s *Store) {
			for i := 0; i < 750; i++ {
				_, err := s.SetNX(fmt.Sprintf("lock:%03d", i), v, time.Hour)
				require.NoError(t, err)
			}
			for i := 0; i < 200; i++ {
				require.NoError(t, s.Set(fmt.Sprintf("c:%03d", i), v, 0))
			}
		}, 300 << 10, 200 << 10},
		{"volatile-lru keeps keys without a TTL", VolatileLRU, func(t *testing.T, s *Store) {
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
				require.NoError(t, s.Configure(MemoryConfig{Limit: 1 << 20, Policy: su.policy}))
				_, err := s.SetNX("guard", tok, 0)
				require.NoError(t, err)
				su.fill(t, s)
				before := s.Stats()
				require.Zero(t, before.Evictions)

				err = w.write(s, bytes.Repeat([]byte("B"), su.big))
				require.ErrorIs(t, err, ErrNoMemory)
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
	require.NoError(t, s.Configure(MemoryConfig{Limit: cost("lock", []byte("t")) + cost("c", nil), Policy: AllKeysLRU}))
	_, err := s.SetNX("lock", []byte("t"), time.Hour)
	require.NoError(t, err)
	require.NoError(t, s.Set("c", nil, 0))
	require.Greater(t, cost("n", []byte("1")), cost("c", nil))

	_, err = s.IncrBy("n", 1, 0)
	require.ErrorIs(t, err, ErrNoMemory)
	assert.True(t, s.Exists("c"), "evicted for a counter that could not fit")
	assert.Zero(t, s.Stats().Evictions)
}
