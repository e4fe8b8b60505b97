package shm

import (
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/kv"
)

func get(t *testing.T, s *Store, key string) (string, bool) {
	t.Helper()
	dst := make([]byte, 1<<20)
	n, found, err := s.GetInto(key, dst)
	require.NoError(t, err)
	return string(dst[:n]), found
}

func TestNoEvictionFailsAndKeepsTheOldValue(t *testing.T) {
	s := openTest(t, kv.MemoryConfig{Limit: 1 << 20})
	value := make([]byte, 4<<10)
	var err error
	n := 0
	for ; n < 1000 && err == nil; n++ {
		err = s.Set(fmt.Sprintf("k%d", n), value, 0)
	}
	require.ErrorIs(t, err, kv.ErrNoMemory)
	require.NoError(t, s.Set("small", []byte("old"), 0))
	err = s.Set("small", make([]byte, 64<<10), 0)
	require.ErrorIs(t, err, kv.ErrNoMemory)
	v, found := get(t, s, "small")
	assert.True(t, found)
	assert.Equal(t, "old", v, "a refused write keeps the old value")
	st, _ := s.Stats()
	assert.Zero(t, st.Evictions)
	assert.LessOrEqual(t, st.BytesUsed, st.MemoryLimit)
	assert.Greater(t, st.BytesUsed, st.MemoryLimit*3/4, "a full store: writes were refused at the limit, not at a shard")
}

func TestLRUEvictsButNeverLocksOrPinned(t *testing.T) {
	s := openTest(t, kv.MemoryConfig{Limit: 1 << 20, Policy: kv.AllKeysLRU}, "pin:")
	for i := 0; i < 20; i++ {
		out, err := s.SetNX(fmt.Sprintf("lock%d", i), []byte("tok"), 0)
		require.NoError(t, err)
		require.Equal(t, kv.Inserted, out)
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
	s := openTest(t, kv.MemoryConfig{Limit: 1 << 20, Policy: kv.VolatileLRU})
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
	s := openTest(t, kv.MemoryConfig{Limit: 1 << 20, Policy: kv.AllKeysLRU}, "pin:")
	value := make([]byte, 4<<10)
	var err error
	for i := 0; err == nil; i++ {
		err = s.Set(fmt.Sprintf("pin:%d", i), value, 0)
	}
	require.ErrorIs(t, err, kv.ErrNoMemory)
	require.NoError(t, s.Set("cold", []byte("c"), 0))
	before, _ := s.Stats()
	// Evicting "cold" (all there is to evict) cannot make room for 4 KiB.
	err = s.Set("big", value, 0)
	require.ErrorIs(t, err, kv.ErrNoMemory)
	after, _ := s.Stats()
	assert.Equal(t, before.Evictions, after.Evictions, "nothing evicted")
	_, found := get(t, s, "cold")
	assert.True(t, found)
}

func TestAnEntryLargerThanAShardIsRefused(t *testing.T) {
	s := openTest(t, kv.MemoryConfig{Limit: 1 << 20})
	err := s.Set("huge", make([]byte, 2<<20), 0)
	require.ErrorIs(t, err, kv.ErrNoMemory)
	assert.Contains(t, err.Error(), "largest this segment holds")
}

func TestIndexChurnKeepsEveryLiveKey(t *testing.T) {
	// One shard of 8192 slots: churning distinct keys fills it with
	// tombstones, which compaction must clear without losing a key.
	s := openTest(t, kv.MemoryConfig{Limit: MinMemoryLimit})
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

func TestCompressionComparesTheDecompressedValue(t *testing.T) {
	s := openTest(t, kv.MemoryConfig{Limit: 4 << 20, Compression: true, CompressionMinSize: 64})
	v := []byte(strings.Repeat("compressible ", 1000))
	require.NoError(t, s.Set("k", v, 0))
	st, _ := s.Stats()
	assert.Less(t, st.BytesUsed, int64(len(v)/4), "stored compressed")
	got, _ := get(t, s, "k")
	assert.Equal(t, string(v), got)
	ok, err := s.DelIfEq("k", v[:len(v)-1])
	require.NoError(t, err)
	assert.False(t, ok)
	ok, _ = s.DelIfEq("k", v)
	assert.True(t, ok)
}

func TestConfigureAppliesToEveryAttachment(t *testing.T) {
	a := openTest(t, kv.MemoryConfig{Limit: 1 << 20})
	b, err := Open(testName(t), Options{Memory: kv.MemoryConfig{Limit: 1 << 20}})
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, a.SetMemoryConfig(kv.MemoryConfig{Policy: kv.AllKeysLRU, Compression: true}))
	st, _ := b.Stats()
	assert.Equal(t, "allkeys-lru", st.Eviction)
	assert.True(t, st.Compression)
	assert.ErrorIs(t, a.SetMemoryConfig(kv.MemoryConfig{Limit: 999999999}), kv.ErrInvalidArgument)
	assert.NoError(t, a.SetMemoryConfig(kv.MemoryConfig{Limit: 1 << 20}))
}

// deadTag claims a process slot for a process that has exited, as a
// process killed while attached leaves it, and returns its tag.
func deadTag(t *testing.T, s *Store) uint32 {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	pid := cmd.Process.Pid
	for i := 0; i < procSlots; i++ {
		if atomic.CompareAndSwapUint64(s.g.procIdent(i), 0, uint64(pid)<<32|12345) {
			return tagOf(i, atomic.AddUint32(s.g.procGen(i), 1))
		}
	}
	t.Fatal("no free process slot")
	return 0
}

// TestRecoveryReadsEachStepOfAWrite stops a dead owner's replacement of
// key's value after each step of the write protocol, with the shard still
// locked by it, and checks what the next caller reads once it has taken the
// lock over: the old value before the commit (the index store), the new
// one from it on, and a consistent shard either way.
func TestRecoveryReadsEachStepOfAWrite(t *testing.T) {
	steps := []string{"allocated", "written", "old in flight", "published", "new live", "old freed"}
	for stop := range steps {
		t.Run(steps[stop], func(t *testing.T) {
			s := openTest(t, kv.MemoryConfig{Limit: 1 << 20})
			require.NoError(t, s.Set("key", []byte("old value"), 0))
			sh, h, tag := s.locate("key")
			dead := deadTag(t, s)
			atomic.StoreUint32(sh.u32(sLock), dead) // it died holding the lock
			pos, old, _ := sh.lookup(tag, "key")
			stored := []byte("new value, longer")
			b := sh.alloc(entrySize(3, len(stored)))
			do := []func(){
				func() {},
				func() { sh.writeEntry(b, "key", stored, 0, 0, 0) },
				func() { sh.setState(old, stateInFlight) },
				func() { atomic.StoreUint64(sh.slot(pos), makeSlot(tag, b)) },
				func() { sh.setState(b, stateLive) },
				func() { sh.release(old) },
			}
			for _, f := range do[:stop+1] {
				f()
			}
			_ = h
			start := time.Now()
			v, found := get(t, s, "key")
			waited := time.Since(start)
			require.True(t, found)
			if stop < 3 {
				assert.Equal(t, "old value", v)
			} else {
				assert.Equal(t, string(stored), v)
			}
			assert.Less(t, waited, 100*time.Millisecond, "taken over within the bound")
			assert.Equal(t, uint64(1), s.Recoveries())
			require.NoError(t, s.Check())
			st, _ := s.Stats()
			assert.Equal(t, int64(1), st.Keys)
		})
	}
}

func TestRecoveryReadsAnInterruptedRemoval(t *testing.T) {
	for stop, step := range []string{"in flight", "tombstone"} {
		t.Run(step, func(t *testing.T) {
			s := openTest(t, kv.MemoryConfig{Limit: 1 << 20})
			require.NoError(t, s.Set("key", []byte("v"), 0))
			sh, _, tag := s.locate("key")
			atomic.StoreUint32(sh.u32(sLock), deadTag(t, s))
			pos, b, _ := sh.lookup(tag, "key")
			sh.setState(b, stateInFlight)
			if stop == 1 {
				sh.removeAt(pos)
			}
			_, found := get(t, s, "key")
			assert.Equal(t, stop == 0, found, "before the tombstone the entry stays")
			require.NoError(t, s.Check())
		})
	}
}

func TestALockHeldByALiveProcessIsNotTakenOver(t *testing.T) {
	s := openTest(t, kv.MemoryConfig{Limit: 1 << 20})
	other, err := Open(testName(t), Options{})
	require.NoError(t, err)
	defer other.Close()
	sh, _, _ := s.locate("key")
	tookOver, _ := other.g.lockWord(sh.u32(sLock), other.tag)
	require.False(t, tookOver)
	done := make(chan struct{})
	go func() {
		defer close(done)
		get(t, s, "key")
	}()
	select {
	case <-done:
		t.Fatal("took a live owner's lock")
	case <-time.After(3 * lockPoll):
	}
	unlockWord(sh.u32(sLock))
	<-done
	assert.Zero(t, s.Recoveries())
}
