package memstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

func grantFenced(t *testing.T, s *Store, name string, ttl time.Duration) int64 {
	t.Helper()
	out, f, err := s.SetNXFenced(name, []byte("tok"), ttl)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out, name)
	return f
}

func TestFencesSurviveFlushAndEviction(t *testing.T) {
	s := New(Options{SweepInterval: -1, Memory: contract.MemoryConfig{Limit: 64 << 10, Policy: contract.AllKeysLRU}})
	defer s.Close()
	f1 := grantFenced(t, s, "lock", 0)
	ok, err := s.SetFenced("data", []byte("v1"), 0, "lock", f1)
	require.NoError(t, err)
	require.True(t, ok)
	s.Flush()
	f, _ := s.Fence("lock")
	assert.Equal(t, f1, f, "Flush keeps fences")
	ok, _ = s.SetFenced("data", []byte("v2"), 0, "lock", f1)
	assert.True(t, ok, "nobody was granted since: still the latest")
	// Many times the limit written: entries go, fences stay.
	value := make([]byte, 1024)
	for i := 0; i < 1000; i++ {
		require.NoError(t, s.Set(fmt.Sprint("fill:", i), value, 0))
	}
	assert.Positive(t, s.Stats().Evictions)
	f, _ = s.Fence("lock")
	assert.Equal(t, f1, f, "eviction keeps fences")
	assert.Greater(t, grantFenced(t, s, "lock", 0), f1)
}

func TestAFullShardForgetsANameAndRaisesItsFloor(t *testing.T) {
	old := maxFencesPerShard
	maxFencesPerShard = 4
	defer func() { maxFencesPerShard = old }()
	s := New(Options{SweepInterval: -1})
	defer s.Close()
	// Six names of one shard, granted in turn.
	var names []string
	sh, _, _ := s.locate("n:0")
	for i := 0; len(names) < 6; i++ {
		if other, _, _ := s.locate(fmt.Sprint("n:", i)); other == sh {
			names = append(names, fmt.Sprint("n:", i))
		}
	}
	fences := map[string]int64{}
	for _, n := range names {
		fences[n] = grantFenced(t, s, n, 0)
		s.Del(n)
	}
	assert.Len(t, sh.fences.latest, 4)
	// The victims are the lowest fences of samples; new names start at the
	// floor + 1, so which of the first names go is not fixed: two of them.
	var forgotten, kept []string
	for _, n := range names {
		if _, known := sh.fences.current(s.fenceHash(n)); known {
			kept = append(kept, n)
		} else {
			forgotten = append(forgotten, n)
		}
	}
	require.Len(t, forgotten, 2)
	for _, n := range forgotten {
		f, _ := s.Fence(n)
		assert.GreaterOrEqual(t, f, fences[n], "a forgotten name reports the floor, no less than its fence")
		ok, _ := s.SetFenced("d", []byte("x"), 0, n, fences[n])
		assert.False(t, ok, "a forgotten grant's write is refused")
		assert.Greater(t, grantFenced(t, s, n, 0), fences[n], "and its next grant is above it")
		s.Del(n)
	}
	for _, n := range kept {
		if _, known := sh.fences.current(s.fenceHash(n)); known {
			ok, _ := s.SetFenced("d", []byte("x"), 0, n, fences[n])
			assert.True(t, ok, "a remembered name's latest grant writes")
		}
	}
}

func TestSetFencedArguments(t *testing.T) {
	s := New(Options{SweepInterval: -1})
	defer s.Close()
	for _, f := range []int64{0, -1} {
		_, err := s.SetFenced("k", nil, 0, "l", f)
		assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	}
	_, err := s.SetFenced("k", nil, 0, "", 1)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	_, err = s.Fence("")
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	_, _, err = s.SetNXFenced("", nil, 0)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	assert.False(t, s.Exists("k"))
}
