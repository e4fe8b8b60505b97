package shm

import (
	"fmt"
	"sync/atomic"

	"github.com/ephpm/ephpm/contract"
)

// recoverShard makes a shard whose lock was taken over from a dead owner
// consistent again; the caller holds the lock. Because the shard has one
// lock, every in-flight block in it is the dead owner's, and what that
// owner left is one of the states the write protocol passes through:
//
//   - The index is the record of what exists: a block an index slot refers
//     to is live (an in-flight one becomes live again: a removal or a
//     replacement that had not yet committed, or a new block that had);
//     every other block that is not free is freed (a new block not yet
//     published, an old one already replaced or removed, the spare).
//   - An entry in two slots (a compaction cut short) keeps the slot nearer
//     its probe start; the other becomes a tombstone.
//   - Adjacent free blocks merge; free lists, prevFree bits, footers and
//     every derived count are rebuilt from the walk.
//
// Every step is itself one of those states, so a recoverer killed mid-way
// leaves the shard to the next one. A structure that matches none of them
// (a size that does not tile the heap, a slot that points inside a block or
// at a free one, a key that does not hash to its slot) is corruption: the
// shard is marked broken and serves no more calls.
func (s *Store) recoverShard(sh *shard) {
	atomic.AddUint64(s.g.u64(hRecoveries), 1)
	sh.addI64(sRecoveries, 1)
	if err := s.rebuild(sh); err != nil {
		atomic.StoreUint32(sh.u32(sBroken), 1)
	}
}

type bitset []uint64

func newBitset(n int64) bitset           { return make(bitset, (n+63)/64) }
func (b bitset) set(i int64)             { b[i/64] |= 1 << (i % 64) }
func (b bitset) has(i int64) bool        { return b[i/64]&(1<<(i%64)) != 0 }
func (sh *shard) heapUnits() int64       { return sh.heapSize / 8 }
func (sh *shard) inHeap(b, n int64) bool { return b >= 0 && n >= 0 && b+n <= sh.heapSize }

// walk checks that the block sizes tile the heap and returns the set of
// block starts (in 8-byte units).
func (sh *shard) walk() (bitset, error) {
	starts := newBitset(sh.heapUnits())
	for b := int64(0); b < sh.heapSize; {
		size, _, _ := sh.header(b)
		if size < minBlock || !sh.inHeap(b, size) {
			return nil, fmt.Errorf("block at %d has size %d", b, size)
		}
		starts.set(b / 8)
		b += size
	}
	return starts, nil
}

// checkSlot checks that slot value v, at position pos, refers to a block
// start that is not free and holds a key that hashes to this shard, tag and
// a probe path through pos without an empty slot.
func (s *Store) checkSlot(sh *shard, pos int, v uint64, starts bitset) error {
	b := slotBlock(v)
	if !sh.inHeap(b, minBlock) || !starts.has(b/8) {
		return fmt.Errorf("slot %d points at %d, not a block", pos, b)
	}
	size, state, _ := sh.header(b)
	if state == stateFree {
		return fmt.Errorf("slot %d points at the free block %d", pos, b)
	}
	kl := sh.entryKeyLen(b)
	stored := int64(sh.entryMeta(b) & metaLenMask)
	// A block is the entry's size, or up to minBlock-8 more when the rest
	// of the free block it was cut from would not have made a block.
	if need := entrySize(kl, int(stored)); kl < 1 || size < need || size >= need+minBlock {
		return fmt.Errorf("slot %d: block %d of %d bytes holds a key of %d and a value of %d", pos, b, size, kl, stored)
	}
	h := sh.g.hashOf(sh.entryKey(b))
	if int(h&uint64(len(s.shards)-1)) != sh.i || tagOfHash(h) != slotTag(v) {
		return fmt.Errorf("slot %d: the key of block %d does not hash to it", pos, b)
	}
	home := sh.home(slotTag(v))
	for i := home; i != pos; i = (i + 1) & (s.g.indexSlots - 1) {
		if atomic.LoadUint64(sh.slot(i)) == slotEmpty {
			return fmt.Errorf("slot %d: an empty slot %d cuts its probe path", pos, i)
		}
	}
	return nil
}

// rebuild is recoverShard's work: an error if the shard matches none of
// the states the write protocol leaves, among them a value its checks
// refuse (checked.go).
func (s *Store) rebuild(sh *shard) (err error) {
	defer s.catch(&err)
	starts, err := sh.walk()
	if err != nil {
		return err
	}
	// The index: every referenced block, once.
	refs := newBitset(sh.heapUnits())
	at := map[int64]int{} // block -> slot, for blocks met twice
	n := s.g.indexSlots
	for i := 0; i < n; i++ {
		v := atomic.LoadUint64(sh.slot(i))
		if v == slotEmpty || v == slotTomb {
			continue
		}
		if err := s.checkSlot(sh, i, v, starts); err != nil {
			return err
		}
		b := slotBlock(v)
		if !refs.has(b / 8) {
			refs.set(b / 8)
			at[b] = i
			continue
		}
		j := at[b]
		home := sh.home(slotTag(v))
		if sh.dist(home, i) < sh.dist(home, j) {
			atomic.StoreUint64(sh.slot(j), slotTomb)
			at[b] = i
		} else {
			atomic.StoreUint64(sh.slot(i), slotTomb)
		}
	}
	// The heap: referenced blocks live, the others free.
	for b := int64(0); b < s.g.heapSize; b += sh.blockSize(b) {
		switch st := sh.blockState(b); {
		case refs.has(b / 8):
			if st != stateLive {
				sh.setState(b, stateLive)
			}
		case st != stateFree:
			sh.setState(b, stateFree)
		}
	}
	// Merge free runs, then derive the rest.
	for b := int64(0); b < s.g.heapSize; {
		size, st, pf := sh.header(b)
		if st == stateFree {
			for next := b + size; next < s.g.heapSize && sh.blockState(next) == stateFree; next = b + size {
				size += sh.blockSize(next)
				sh.setHeader(b, size, stateFree, pf)
			}
		}
		b += size
	}
	s.derive(sh)
	return nil
}

// derive recomputes everything derived in a shard whose heap walk and index
// are consistent: prevFree bits, footers, free lists, counts and charges.
func (s *Store) derive(sh *shard) {
	for c := 0; c < nClasses; c++ {
		atomic.StoreUint32(sh.listHead(c), 0)
	}
	atomic.StoreUint32(sh.freeMap(), 0)
	atomic.StoreUint32(sh.spare(), 0) // rebuild freed it
	var f figures
	prevFree := false
	for b := int64(0); b < s.g.heapSize; {
		size, st, pf := sh.header(b)
		if pf != prevFree {
			sh.setHeader(b, size, st, prevFree)
		}
		if st == stateFree {
			sh.listInsert(b, size)
		} else {
			f.add(sh, b, size)
		}
		prevFree = st == stateFree
		b += size
	}
	atomic.StoreInt64(sh.i64(sHeapUsed), f.heapUsed)
	atomic.StoreInt64(sh.used(), f.used)
	atomic.StoreInt64(sh.sessUsed(), f.sessUsed)
	for c := contract.EvictPlain; c < contract.NumEvictClasses; c++ {
		atomic.StoreInt64(sh.i64(classField(c, false)), f.evict[c][0])
		atomic.StoreInt64(sh.i64(classField(c, true)), f.evict[c][1])
	}
	atomic.StoreInt64(sh.credit(), 0)
	sh.recount()
	s.recountWaiters(sh)
}

// figures are the counts a heap walk derives from a shard's live blocks:
// heap bytes, bytes charged, bytes charged to session data, and the
// evictable bytes of each class, all and with a TTL.
type figures struct {
	heapUsed, used, sessUsed int64
	evict                    [contract.NumEvictClasses][2]int64
}

// add counts the live block b of size bytes. The index must be readable:
// whether session data is held is a lookup of its lock.
func (f *figures) add(sh *shard, b, size int64) {
	f.heapUsed += size
	c := chargeOf(size)
	f.used += c
	cl, session := sh.classOf(b)
	if session {
		f.sessUsed += c
	}
	if cl != contract.EvictKept {
		f.evict[cl][0] += c
		if sh.entryExpireAt(b) != 0 {
			f.evict[cl][1] += c
		}
	}
}
