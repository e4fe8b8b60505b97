package shm

import (
	"fmt"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/sessionkeys"
)

// Eviction beside a removed file and beside broken shards (review findings
// R1, R2, R7): eviction goes over every shard, so what one shard or the
// file refuses must end it, or be left out of it, never loop, never be
// released before it is marked, and never count.

// openEvicting opens a fresh segment name with a 4 MiB limit (4 shards), a
// 1 MiB session budget and policy, closed and removed when t ends.
func openEvicting(t *testing.T, name string, policy contract.Policy) *Store {
	t.Helper()
	removeSegment(name)
	s, err := Open(name, Options{Memory: contract.MemoryConfig{Limit: 4 << 20, SessionLimit: 1 << 20, Policy: policy},
		SessionDataPrefix: sessionkeys.DataPrefix, SessionLockPrefix: sessionkeys.LockPrefix})
	require.NoError(t, err)
	require.Greater(t, len(s.shards), 1)
	require.Equal(t, contract.KindSession, s.g.kindOf(sessionkeys.DataKey("x")))
	t.Cleanup(func() {
		s.Close()
		removeSegment(name)
	})
	return s
}

// writeFor is the write of key with a value of n bytes that asks for
// delta more bytes, as install builds it.
func writeFor(s *Store, key string, n int, delta int64) *write {
	_, h, tag := s.locate(key)
	return &write{key: key, kind: s.g.kindOf(key), h: h, tag: tag, stored: make([]byte, n), delta: delta}
}

// makeRoomReturns runs s.makeRoom(sh, r, w) within a call's ticket, as
// a write does, and returns what it returned, failing t if it has not
// returned within hangLimit (then it ends the test binary: a hang).
func makeRoomReturns(t *testing.T, s *Store, sh *shard, r room, w *write) (bool, error) {
	t.Helper()
	type result struct {
		fit bool
		err error
	}
	tk, err := s.enter()
	require.NoError(t, err)
	done := make(chan result, 1)
	go func() {
		defer s.leave(tk)
		fit, err := s.makeRoom(sh, r, w)
		done <- result{fit, err}
	}()
	select {
	case res := <-done:
		return res.fit, res.err
	case <-time.After(hangLimit):
		// It goes on, in its ticket, which the cleanup's Close would wait
		// for (a panic runs the cleanups first): end the test binary here.
		fmt.Fprintf(os.Stderr, "--- FAIL: %s: makeRoom (room %d) has not returned after %v; its stack:\n", t.Name(), r, hangLimit)
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		os.Exit(1)
		return false, nil
	}
}

// TestAWriteThatEvictsStopsWhenTheFileIsRemoved: a write refused for the
// memory limit that makes room once the segment's file is found removed
// fails with ErrSegmentRemoved, whether eviction could make it fit (it
// would evict) or not (it would sweep): every shard's lock is refused
// then, and neither is a broken shard to pass by. Before, eviction took
// the refused lock for a broken shard's and tried again, for ever (the
// first case hung), and the sweep's refusals were dropped, the write
// refused for memory instead (the second answered nil).
func TestAWriteThatEvictsStopsWhenTheFileIsRemoved(t *testing.T) {
	for _, tc := range []struct {
		name    string
		deficit int64 // beyond the limit
	}{
		{"evicting", 4 << 10},
		{"sweeping", 64 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := testName(t)
			s := openEvicting(t, name, contract.AllKeysLRU)
			for i := 0; i < 1000; i++ {
				require.NoError(t, s.Set(fmt.Sprint("k", i), make([]byte, 2000), 0))
			}
			require.NoError(t, os.Remove(Path("", name)))
			require.ErrorIs(t, s.Revalidate(), ErrSegmentRemoved)

			w := writeFor(s, keyIn(s, "new", 1), 2000, s.g.limit-s.reserved()+tc.deficit)
			sh, _, _ := s.locate(w.key)
			fit, err := makeRoomReturns(t, s, sh, overLimit, w)
			require.ErrorIs(t, err, ErrSegmentRemoved)
			require.False(t, fit)
		})
	}
}

// TestMakingRoomMarksACorruptShardBrokenBeforeReleasingIt: a corruption
// that making room finds in a shard (here in the look-up of the written
// key's own entry, whose home index slot points past the heap) marks the
// shard broken while the call still holds its lock, on each of makeRoom's
// ways: a write refused in its shard, one refused for its shard's share
// of the session budget, one refused for the memory limit. Before, each
// released the lock first, and another process could take the
// half-changed shard as serving in between.
func TestMakingRoomMarksACorruptShardBrokenBeforeReleasingIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    room
		key  string
	}{
		{"in its shard", heapFull, "big"},
		{"over its share", overShare, sessionkeys.DataKey("abcdefghijklmnopqrstuvwxyz012345")},
		{"over the limit", overLimit, "big"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openEvicting(t, testName(t), contract.AllKeysLRU)
			sh, _, tag := s.locate(tc.key)
			// w's key's home slot, a look-up's first: damaged to point past
			// the heap.
			home := sh.home(tag)
			require.Equal(t, uint64(slotEmpty), atomic.LoadUint64(sh.slot(home)))
			atomic.StoreUint64(sh.slot(home), makeSlot(tag, sh.g.heapSize-8))

			var heldAtMark []bool
			markedBroken = func(_ *Store, b *shard) {
				heldAtMark = append(heldAtMark, b == sh && atomic.LoadUint32(sh.u32(sLock)) == s.tag)
			}
			t.Cleanup(func() { markedBroken = nil })

			n, delta := 100, int64(0)
			switch tc.r {
			case heapFull:
				n = int(s.g.heapSize) // larger than any free block
			case overLimit:
				delta = s.g.limit + 4<<10
			}
			_, err := makeRoomReturns(t, s, sh, tc.r, writeFor(s, tc.key, n, delta))
			require.ErrorIs(t, err, ErrCorrupt)
			require.True(t, sh.isBroken())
			require.Equal(t, []bool{true}, heldAtMark, "shard %d was marked broken once, holding its lock", sh.i)
			require.Zero(t, atomic.LoadUint32(sh.u32(sLock)), "and released after")
		})
	}
}

// breakShard marks shard i of s broken, as a call that found it corrupt
// does, and leaves it locked by no one.
func breakShard(s *Store, i int) *shard {
	sh := &s.shards[i]
	atomic.StoreUint32(sh.u32(sBroken), 1)
	return sh
}

// TestABrokenShardsChargeRefusesNoWriteElsewhere: a broken shard whose
// charge was damaged (a stray write to its count) refuses no write in
// another shard for the memory limit. Before, its count stayed in the sum
// every shard's reservation is checked against.
func TestABrokenShardsChargeRefusesNoWriteElsewhere(t *testing.T) {
	s := openEvicting(t, testName(t), contract.NoEviction)
	atomic.StoreInt64(breakShard(s, 0).used(), 1<<40)
	require.NoError(t, s.Set(keyIn(s, "other:", 1), make([]byte, 100), 0), "a write to healthy shard 1")
}

// TestABrokenShardsSessionBytesRefuseNoSessionElsewhere: a broken shard
// whose count of session bytes was damaged refuses no session write in
// another shard for the session budget. Before, its count stayed in the
// budget's sum.
func TestABrokenShardsSessionBytesRefuseNoSessionElsewhere(t *testing.T) {
	s := openEvicting(t, testName(t), contract.NoEviction)
	atomic.StoreInt64(breakShard(s, 0).sessUsed(), 1<<40)
	var key string
	for i := 0; ; i++ {
		key = sessionkeys.DataKey(fmt.Sprintf("healthy%025d", i))
		if sh, _, _ := s.locate(key); sh.i != 0 {
			break
		}
	}
	require.NoError(t, s.Set(key, make([]byte, 100), 0), "a session write to a healthy shard")
}

// TestEvictionCountsNoBrokenShardsBytes: a write refused for the limit
// that eviction of every healthy shard's entries would not make fit
// evicts nothing, beside a broken shard whose evictable count was damaged
// to promise it room. Before, that count, which eviction never takes
// (the shard is left out), made the write evict every healthy shard's
// entries in vain.
func TestEvictionCountsNoBrokenShardsBytes(t *testing.T) {
	s := openEvicting(t, testName(t), contract.AllKeysLRU)
	var keys []string
	for i := 0; i < 200; i++ {
		if k := fmt.Sprint("k", i); func() bool { sh, _, _ := s.locate(k); return sh.i != 0 }() {
			require.NoError(t, s.Set(k, make([]byte, 1000), 0))
			keys = append(keys, k)
		}
	}
	atomic.StoreInt64(breakShard(s, 0).i64(classField(contract.EvictPlain, false)), 1<<40)

	w := writeFor(s, keyIn(s, "new", 1), 1000, 2*s.g.limit) // more than eviction can free
	sh, _, _ := s.locate(w.key)
	fit, err := makeRoomReturns(t, s, sh, overLimit, w)
	require.NoError(t, err)
	require.False(t, fit)
	for _, k := range keys {
		_, found, err := s.GetInto(k, make([]byte, 1000))
		require.NoError(t, err)
		require.True(t, found, "%s was evicted for a write eviction could not make fit", k)
	}
}
