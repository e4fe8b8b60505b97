package memstore

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

// A small value rewritten in place, or a removed entry's block reused for
// another key, never shows a reader a mix of two values: readers copy
// recyclable blocks under the shard lock. Writers and readers start
// together; -race reports any read that is not ordered by the lock.
func TestReadersNeverSeeARecycledBlockChange(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	values := [][]byte{bytes.Repeat([]byte("a"), 64), bytes.Repeat([]byte("b"), 64), bytes.Repeat([]byte("c"), 60)}
	keys := []string{"r:0", "r:1", "r:2", "r:3"}
	for _, k := range keys {
		require.NoError(t, s.Set(k, values[0], 0))
	}
	race(8, func(g int) bool {
		if g < 4 { // writers
			for i := 0; i < 20000; i++ {
				k := keys[(g+i)%len(keys)]
				switch i % 4 {
				case 0, 1:
					assert.NoError(t, s.Set(k, values[(g+i)%len(values)], 0))
				case 2:
					s.Del(k)
				case 3:
					_, err := s.SetNX(k, values[i%len(values)], time.Minute)
					assert.NoError(t, err)
				}
			}
			return false
		}
		buf := make([]byte, 128) // readers
		for i := 0; i < 20000; i++ {
			n, found := s.GetInto(keys[(g+i)%len(keys)], buf)
			if !found {
				continue
			}
			v := buf[:n]
			if !bytes.Equal(v, values[0]) && !bytes.Equal(v, values[1]) && !bytes.Equal(v, values[2]) {
				t.Errorf("read %q, not one of the written values", v)
				return false
			}
		}
		return false
	})
}

func TestSmallWritesReuseBlocks(t *testing.T) {
	s, _ := newTestStore(t)
	v := bytes.Repeat([]byte("v"), 64)
	require.NoError(t, s.Set("k", v, 0))
	allocs := testing.AllocsPerRun(1000, func() {
		if err := s.Set("k", v, 0); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "an overwrite of the same size is made in place")
	allocs = testing.AllocsPerRun(1000, func() {
		if out, err := s.SetNX("lock", v[:32], time.Minute); err != nil || out != contract.Inserted {
			t.Fatal(out, err)
		}
		if !s.DelIfEq("lock", v[:32]) {
			t.Fatal("del_if_eq missed")
		}
	})
	assert.Zero(t, allocs, "a lock taken and released reuses its shard's spare block")

	// Large or compressed values are built anew, outside the lock.
	big := bytes.Repeat([]byte("x"), 4096)
	allocs = testing.AllocsPerRun(100, func() {
		if err := s.Set("big", big, 0); err != nil {
			t.Fatal(err)
		}
	})
	assert.Equal(t, 1.0, allocs)
}

// Reuse keeps the entry's charge what a new block would be charged.
func TestReuseKeepsTheAccounting(t *testing.T) {
	s, _ := newTestStore(t)
	require.NoError(t, s.Set("k", []byte("12345678"), 0))
	require.NoError(t, s.Set("k", []byte("1234567"), 0)) // same 8-byte rounding: in place
	assert.Equal(t, cost("k", []byte("1234567")), s.Stats().BytesUsed)
	require.NoError(t, s.Set("k", []byte("123456789"), 0)) // larger: a new block
	assert.Equal(t, cost("k", []byte("123456789")), s.Stats().BytesUsed)
	v, ok := s.Get("k")
	require.True(t, ok)
	assert.Equal(t, "123456789", string(v))
}

// Near the limit, writers in other shards must not take back as credit the
// room a refused write had just reclaimed: a 100 KiB write that fits keeps
// fitting while 16 writers churn small keys in their own shards.
func TestWritesNearTheLimitFitWhileOthersChurn(t *testing.T) {
	const limit = 4 << 20
	s := New(Options{SweepInterval: -1, Memory: contract.MemoryConfig{Limit: limit, Policy: contract.NoEviction}})
	defer s.Close()
	fill := bytes.Repeat([]byte("x"), 1000)
	for i := 0; s.Stats().BytesUsed <= limit-112<<10; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("fill:%d", i), fill, 0))
	}
	v := bytes.Repeat([]byte("y"), 100<<10)
	refused := 0
	whileRunning(16, func(g int) {
		k := fmt.Sprintf("churn:%d", g)
		s.Set(k, []byte("v"), 0) // may fail near the limit: not what is tested
		s.Del(k)
	}, func() {
		for i := 0; i < 200; i++ {
			if err := s.Set("target", v, 0); err != nil {
				refused++
			}
			s.Del("target")
		}
	})
	assert.Zero(t, refused, "writes that fit were refused")
	assert.LessOrEqual(t, s.Stats().BytesUsed, int64(limit))
}

// whileRunning runs work(i) over and over in n goroutines (i = 0..n-1)
// while body runs, then stops them and waits for them.
func whileRunning(n int, work func(i int), body func()) {
	var stop atomic.Bool
	var done sync.WaitGroup
	for i := 0; i < n; i++ {
		done.Add(1)
		go func(i int) {
			defer done.Done()
			for !stop.Load() {
				work(i)
			}
		}(i)
	}
	body()
	stop.Store(true)
	done.Wait()
}
