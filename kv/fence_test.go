package kv

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func grantFenced(t *testing.T, s *Store, name string, ttl time.Duration) int64 {
	t.Helper()
	out, f, err := s.SetNXFenced(name, []byte("tok"), ttl)
	require.NoError(t, err)
	require.Equal(t, Inserted, out, name)
	return f
}

func TestFencesSurviveFlushAndEviction(t *testing.T) {
	s := New(Options{SweepInterval: -1, Memory: MemoryConfig{Limit: 64 << 10, Policy: AllKeysLRU}})
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

func TestFencesOfCMemoryNamesAreCopied(t *testing.T) {
	s := New(Options{SweepInterval: -1})
	defer s.Close()
	buf := []byte("lock:a")
	name := unsafe.String(&buf[0], len(buf)) // a view of memory the caller reuses, as C's
	f1 := grantFenced(t, s, name, 0)
	copy(buf, "lock:b")
	f, _ := s.Fence("lock:a")
	assert.Equal(t, f1, f, "the record keeps its own copy of the name")
	f, _ = s.Fence("lock:b")
	assert.Zero(t, f)
}

func TestAShardForgetsAnIdleNameAndRaisesItsFloor(t *testing.T) {
	old := maxFencesPerShard
	maxFencesPerShard = 4
	defer func() { maxFencesPerShard = old }()
	s := New(Options{SweepInterval: -1})
	defer s.Close()
	// Six names of one shard.
	var names []string
	want, _, _ := s.locate("n:0")
	for i := 0; len(names) < 6; i++ {
		if sh, _, _ := s.locate(fmt.Sprint("n:", i)); sh == want {
			names = append(names, fmt.Sprint("n:", i))
		}
	}
	held := grantFenced(t, s, names[0], 0) // held throughout: never the one forgotten
	fences := map[string]int64{names[0]: held}
	for _, n := range names[1:] {
		f := grantFenced(t, s, n, 0)
		fences[n] = f
		s.Del(n)
	}
	sh := want
	assert.Len(t, sh.fences.latest, 4)
	f, _ := s.Fence(names[0])
	assert.Equal(t, held, f, "a held lock's name is kept")
	ok, _ := s.SetFenced("d", []byte("x"), 0, names[0], held)
	assert.True(t, ok)
	forgotten := 0
	for _, n := range names[1:] {
		if _, known := sh.fences.current(n); known {
			continue
		}
		forgotten++
		f, _ := s.Fence(n)
		assert.GreaterOrEqual(t, f, fences[n], "a forgotten name reports the floor, no less than its fence")
		ok, _ := s.SetFenced("d", []byte("x"), 0, n, fences[n])
		assert.False(t, ok, "a forgotten grant's write is refused")
		assert.Greater(t, grantFenced(t, s, n, 0), fences[n], "and its next grant is above it")
		s.Del(n)
	}
	assert.Positive(t, forgotten)
}

func TestSetFencedArguments(t *testing.T) {
	s := New(Options{SweepInterval: -1})
	defer s.Close()
	for _, f := range []int64{0, -1} {
		_, err := s.SetFenced("k", nil, 0, "l", f)
		assert.ErrorIs(t, err, ErrInvalidArgument)
	}
	_, err := s.SetFenced("k", nil, 0, "", 1)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	_, err = s.Fence("")
	assert.ErrorIs(t, err, ErrInvalidArgument)
	_, _, err = s.SetNXFenced("", nil, 0)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	assert.False(t, s.Exists("k"))
}
