package shm

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

func TestIndexChurnKeepsEveryLiveKey(t *testing.T) {
	// One shard of 8192 slots: churning distinct keys fills it with
	// tombstones, which compaction must clear without losing a key.
	s := openTest(t, contract.MemoryConfig{Limit: MinMemoryLimit})
	require.Equal(t, 1, s.g.shards)
	const live = 2000
	for i := 0; i < 40000; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("key:%d", i), []byte("v"), 0), "set %d", i)
		if i >= live {
			// Keys hash all over the index: their tombstones land inside runs.
			j := i - live
			ok, err := s.Del(fmt.Sprintf("key:%d", j))
			require.NoError(t, err)
			require.True(t, ok, "del %d", j)
		}
		if i%10000 == 0 {
			require.NoError(t, s.Check())
		}
	}
	for i := 40000 - live; i < 40000; i++ {
		_, found := get(t, s, fmt.Sprintf("key:%d", i))
		require.True(t, found, "key:%d lost", i)
	}
	st, _ := s.Stats()
	assert.Equal(t, int64(live), st.Keys)
}

// keyAt returns a key of shard 0 whose probe path starts at slot home.
func keyAt(s *Store, prefix string, home int) string {
	for i := 0; ; i++ {
		k := prefix + strconv.Itoa(i)
		h := s.g.hashOf(k)
		if h&uint64(len(s.shards)-1) == 0 && int(tagOfHash(h))&(s.g.indexSlots-1) == home {
			return k
		}
	}
}

// slotsOf returns the slot of each live entry of sh, by key. Caller holds
// sh's lock.
func slotsOf(sh *shard) map[string]int {
	at := map[string]int{}
	for i := 0; i < sh.g.indexSlots; i++ {
		if v := atomic.LoadUint64(sh.slot(i)); v != slotEmpty && v != slotTomb {
			at[sh.entryKey(sh.blockOf(v))] = i
		}
	}
	return at
}

// wrappedPast reports whether some live entry of sh lies past the wrap
// (in a slot below its probe start) with slot t on its probe path. Caller
// holds sh's lock.
func wrappedPast(sh *shard, t int) bool {
	for j := 0; j < t; j++ {
		v := atomic.LoadUint64(sh.slot(j))
		if v == slotEmpty {
			return false // no run from the last slots gets further
		}
		if v != slotTomb && sh.home(slotTag(v)) > j && sh.home(slotTag(v)) <= t {
			return true
		}
	}
	return false
}

// Compaction moves entries only down, never across the wrap, loses none,
// and leaves a tombstone only where an entry past the wrap needs it: under
// churn that fills the index, with runs made to wrap every round.
func TestCompactionMovesEntriesOnlyDownAndKeepsEveryOne(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: MinMemoryLimit})
	require.Equal(t, 1, s.g.shards)
	sh := &s.shards[0]
	n := s.g.indexSlots
	r := rand.New(rand.NewPCG(3, 3))
	live := map[string]bool{}
	next, kept := 0, 0
	for round := 0; round < 40; round++ {
		for len(live) < n/3 { // as many as the heap holds
			k := "k" + strconv.Itoa(next)
			next++
			require.NoError(t, s.Set(k, []byte("v"), 0))
			live[k] = true
		}
		// A run past the wrap: three keys whose probe starts at the last
		// slot, the first of them removed below.
		wrap := []string{keyAt(s, "w"+strconv.Itoa(round)+":", n-1)}
		wrap = append(wrap, keyAt(s, wrap[0]+":", n-1), keyAt(s, wrap[0]+"::", n-1))
		for _, k := range wrap {
			require.NoError(t, s.Set(k, []byte("v"), 0))
			live[k] = true
		}
		for k := range live {
			if k == wrap[0] || k != wrap[1] && k != wrap[2] && r.IntN(5) < 2 {
				_, err := s.Del(k)
				require.NoError(t, err)
				delete(live, k)
			}
		}
		require.NoError(t, s.lock(sh))
		before := slotsOf(sh)
		sh.compact()
		after := slotsOf(sh)
		found := map[string]int{}
		for k := range before {
			found[k], _, _ = sh.lookup(tagOfHash(s.g.hashOf(k)), k)
		}
		var stray []int // tombstones no entry past the wrap needs
		for i := 0; i < n; i++ {
			if atomic.LoadUint64(sh.slot(i)) == slotTomb {
				if !wrappedPast(sh, i) {
					stray = append(stray, i)
				}
				kept++
			}
		}
		s.unlock(sh)
		for k, i := range before {
			j, ok := after[k]
			require.True(t, ok, "round %d: %s lost", round, k)
			require.LessOrEqual(t, j, i, "round %d: %s moved up", round, k)
			require.Equal(t, j, found[k], "round %d: %s is found where it is", round, k)
		}
		require.Len(t, after, len(before))
		require.Empty(t, stray, "round %d: tombstones in no wrapped entry's path", round)
		require.NoError(t, s.Check(), "round %d", round)
	}
	t.Logf("tombstones kept for entries past the wrap: %d in 40 compactions", kept)
	require.Positive(t, kept, "the test made runs that wrap")
	buf := make([]byte, 8)
	for k := range live {
		_, found, err := s.GetInto(k, buf)
		require.NoError(t, err)
		require.True(t, found, "%s lost", k)
	}
}

// A compaction cut short after any of its stores (a SIGKILL) leaves an
// index recovery repairs, with every entry there: through the wrap, where
// a shift now ends in a tombstone.
func TestCompactionCutShortAnywhereIsRecovered(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: MinMemoryLimit})
	sh := &s.shards[0]
	n := s.g.indexSlots
	var keys []string
	for i, home := range []int{n - 6, n - 5, n - 5, n - 3, n - 2, n - 2, n - 1, n - 1, n - 3, 0, n - 1, 1, n - 2, 2, 0, n - 4} {
		keys = append(keys, keyAt(s, fmt.Sprintf("c%d:", i), home))
	}
	gone := map[string]bool{keys[0]: true, keys[3]: true, keys[6]: true, keys[9]: true, keys[12]: true}
	setUp := func() {
		require.NoError(t, s.Flush())
		for _, k := range keys {
			require.NoError(t, s.Set(k, []byte(k), 0))
		}
		for k := range gone {
			_, err := s.Del(k)
			require.NoError(t, err)
		}
	}
	type cut struct{}
	t.Cleanup(func() { compactHook = nil })
	for k := 0; ; k++ {
		setUp()
		stores := 0
		compactHook = func() {
			if stores++; stores > k {
				panic(cut{})
			}
		}
		require.NoError(t, s.lock(sh))
		done := func() (done bool) {
			defer func() {
				if r := recover(); r != nil {
					require.Equal(t, cut{}, r)
				}
			}()
			sh.compact()
			return true
		}()
		compactHook = nil
		s.recoverShard(sh) // what the next locker does after a SIGKILL
		require.False(t, sh.isBroken(), "cut after %d stores: recovery found the index corrupt", k)
		s.unlock(sh)
		require.NoError(t, s.Check(), "cut after %d stores", k)
		for _, key := range keys {
			v, found := get(t, s, key)
			require.Equal(t, !gone[key], found, "cut after %d stores: %s", k, key)
			if found {
				require.Equal(t, key, v)
			}
		}
		if done {
			t.Logf("a whole compaction made %d stores; cut after each of them", k)
			require.Positive(t, k)
			return
		}
	}
}
