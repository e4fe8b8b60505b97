package shm

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

// TestARewriteOfTheSameSizeTakesTheSpare: a value rewritten at the same
// size alternates between two blocks, the old one waiting as the shard's
// spare, and a lock taken again takes the block its release left.
func TestARewriteOfTheSameSizeTakesTheSpare(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	blockOf := func(key string) int64 {
		sh, _, tag := s.locate(key)
		_, b, _ := sh.lookup(tag, key)
		require.NotEqual(t, int64(noBlock), b)
		return b
	}
	require.NoError(t, s.Set("k", []byte("first value"), 0))
	first := blockOf("k")
	require.NoError(t, s.Set("k", []byte("other value"), 0))
	second := blockOf("k")
	sh, _, _ := s.locate("k")
	assert.Equal(t, link(first), atomic.LoadUint32(sh.spare()), "the old block is the spare")
	require.NoError(t, s.Check())
	require.NoError(t, s.Set("k", []byte("third value"), 0))
	assert.Equal(t, first, blockOf("k"), "the rewrite took the spare")
	assert.Equal(t, link(second), atomic.LoadUint32(sh.spare()))
	require.NoError(t, s.Check())

	token := []byte("0123456789abcdef0123456789abcdef")
	won, err := s.SetNX("lock", token, 0)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, won)
	held := blockOf("lock")
	ok, err := s.DelIfEq("lock", token)
	require.NoError(t, err)
	require.True(t, ok)
	lsh, _, _ := s.locate("lock")
	assert.Equal(t, link(held), atomic.LoadUint32(lsh.spare()))
	won, err = s.SetNX("lock", token, 0)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, won)
	assert.Equal(t, held, blockOf("lock"), "the lock took the block its release left")
	require.NoError(t, s.Check())
}

// TestTheSparesBytesServeAnAllocationThatNeedsThem: an allocation that no
// free block holds frees the spare, which merges with its free neighbour
// into the block it needs; no byte is kept from a write by the spare.
func TestTheSparesBytesServeAnAllocationThatNeedsThem(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	sh := &s.shards[0]
	require.NoError(t, s.lock(sh))
	defer s.unlock(sh)
	a := sh.alloc(spareMax)
	b := sh.alloc(spareMax)
	rest := sh.alloc(s.g.heapSize - 2*spareMax)
	require.Equal(t, []int64{0, spareMax, 2 * spareMax}, []int64{a, b, rest}, "the heap, cut in three")
	sh.release(a) // the spare
	sh.release(b) // the spare now; a is freed
	require.Equal(t, link(b), atomic.LoadUint32(sh.spare()))
	got := sh.alloc(2 * spareMax)
	assert.Equal(t, a, got, "a and the spare merged into the block")
	assert.Zero(t, atomic.LoadUint32(sh.spare()))
	assert.Equal(t, int64(noBlock), sh.alloc(minBlock), "the heap is full")
	sh.release(got) // larger than spareMax: freed
	sh.release(rest)
	assert.Zero(t, atomic.LoadUint32(sh.spare()))
	require.NoError(t, s.checkShard(sh))
	assert.Equal(t, s.g.heapSize, sh.blockSize(0), "one free block again")
}

// TestRecoveryFreesTheSpare: a process that died holding the lock, in
// the middle of making a block the spare or with one kept, leaves blocks
// recovery frees; the shard is consistent and its bytes all usable.
func TestRecoveryFreesTheSpare(t *testing.T) {
	for _, step := range []string{"marked, not named", "named"} {
		t.Run(step, func(t *testing.T) {
			s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
			require.NoError(t, s.Set("key", []byte("v"), 0))
			sh, _, _ := s.locate("key")
			require.NoError(t, s.lock(sh))
			sh.dropSpare()
			b := sh.alloc(64)
			size, _, pf := sh.header(b)
			sh.setHeader(b, size, stateSpare, pf)
			if step == "named" {
				atomic.StoreUint32(sh.spare(), link(b))
			}
			atomic.StoreUint32(sh.u32(sLock), deadTag(t, s)) // it died holding the lock
			v, found := get(t, s, "key")
			require.True(t, found)
			assert.Equal(t, "v", v)
			assert.Equal(t, uint64(1), s.Recoveries())
			assert.Zero(t, atomic.LoadUint32(sh.spare()))
			require.NoError(t, s.Check())
		})
	}
}
