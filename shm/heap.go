package shm

import (
	"math/bits"
	"sync/atomic"
)

// Each shard's heap is a sequence of boundary-tagged blocks that tiles it
// exactly: a walk from offset 0 by block sizes visits every block. A block
// starts with one 8-byte header word:
//
//	size (a multiple of 8, at least minBlock) | prevFree<<2 | state
//
// state is free, inFlight (being written or being removed: only ever inside
// a locked shard), live (an entry an index slot refers to) or spare (the
// shard's spare: see release). prevFree says the block before is free. A
// free block holds its free-list links at [8:12) and [12:16) (offset/8 + 1
// of the next and previous free block of its class; 0: none) and its size
// again in its last 8 bytes, so that the block after it can find its start.
//
// Sizes change only by single 8-byte stores ordered so that the walk is
// consistent at every instant: a split writes the remainder's header (inside
// the block, where no walk looks) before shrinking the block's size; a
// merge grows the first block's size over its neighbour. The free lists,
// prevFree bits, footers and byte counts are derived: recovery rebuilds
// them from the walk.
const (
	stateFree     = 0
	stateInFlight = 1
	stateLive     = 2
	stateSpare    = 3
	stateMask     = 3
	prevFreeBit   = 4

	minBlock = 32
	nClasses = 32
	noBlock  = -1

	// spareMax is the largest block kept as a shard's spare: at most
	// 4 KiB of each shard's heap (1 MiB at least) waits for its size.
	spareMax = 4096
)

func (sh *shard) hdrWord(b int64) *uint64 { return sh.hu64(b) }

// header reads block b's header word, checked: its size must fit the heap
// from b (checked.go). Caller holds the lock.
func (sh *shard) header(b int64) (size int64, state int, prevFree bool) {
	w := atomic.LoadUint64(sh.hdrWord(b))
	if size = int64(w &^ 7); size < minBlock || size > sh.heapSize-b {
		panic(corruption{sh, "a block's size does not fit the heap", b})
	}
	return size, int(w & stateMask), w&prevFreeBit != 0
}

func (sh *shard) setHeader(b, size int64, state int, prevFree bool) {
	w := uint64(size) | uint64(state)
	if prevFree {
		w |= prevFreeBit
	}
	storeRel64(sh.hdrWord(b), w)
}

func (sh *shard) blockSize(b int64) int64 { s, _, _ := sh.header(b); return s }
func (sh *shard) blockState(b int64) int  { _, st, _ := sh.header(b); return st }

// setState changes block b's state, keeping its size and prevFree bit as
// they are: nothing is read through them here, so they are not checked.
func (sh *shard) setState(b int64, state int) {
	w := atomic.LoadUint64(sh.hdrWord(b))
	storeRel64(sh.hdrWord(b), w&^stateMask|uint64(state))
}

func (sh *shard) setPrevFree(b int64, pf bool) {
	if b >= sh.heapSize {
		return
	}
	s, st, _ := sh.header(b)
	sh.setHeader(b, s, st, pf)
}

// sizeClass is the free list of blocks of size bytes: [32,64) is 0,
// [64,128) is 1, and so on.
func sizeClass(size int64) int {
	return min(bits.Len64(uint64(size>>5))-1, nClasses-1)
}

func (sh *shard) listHead(c int) *uint32   { return sh.u32(sFreeLists + int64(c)*4) }
func (sh *shard) nextFree(b int64) *uint32 { return sh.hu32(b + 8) }
func (sh *shard) prevFreeLink(b int64) *uint32 {
	return sh.hu32(b + 12)
}

func link(b int64) uint32 {
	if b == noBlock {
		return 0
	}
	return uint32(b/8 + 1)
}

func unlink(v uint32) int64 {
	if v == 0 {
		return noBlock
	}
	return int64(v-1) * 8
}

// freeMap is the shard's word of non-empty free lists: alloc finds the
// first list that can hold a size in one look, not one load per class.
func (sh *shard) freeMap() *uint32 { return sh.u32(sFreeMap) }

func (sh *shard) listInsert(b, size int64) {
	c := sizeClass(size)
	h := sh.listHead(c)
	first := sh.linked(atomic.LoadUint32(h))
	if first == noBlock {
		m := sh.freeMap()
		storeDerived32(m, atomic.LoadUint32(m)|1<<c)
	}
	storeDerived32(sh.nextFree(b), link(first))
	storeDerived32(sh.prevFreeLink(b), 0)
	if first != noBlock {
		storeDerived32(sh.prevFreeLink(first), link(b))
	}
	storeDerived32(h, link(b))
	storeDerived64(sh.hu64(b+size-8), uint64(size))
}

func (sh *shard) listRemove(b, size int64) {
	next := sh.nextListed(b)
	prev := sh.linked(atomic.LoadUint32(sh.prevFreeLink(b)))
	if prev == noBlock {
		c := sizeClass(size)
		storeDerived32(sh.listHead(c), link(next))
		if next == noBlock {
			m := sh.freeMap()
			storeDerived32(m, atomic.LoadUint32(m)&^(1<<c))
		}
	} else {
		storeDerived32(sh.nextFree(prev), link(next))
	}
	if next != noBlock {
		storeDerived32(sh.prevFreeLink(next), link(prev))
	}
}

// alloc returns an in-flight block of exactly size bytes (a multiple of 8,
// at least minBlock), or noBlock if no free block is large enough: the
// shard's spare if it is size's block (what a rewrite of a value of the
// same size, or a lock taken again, asks for: no list is touched), else
// first fit in the size's class, then the first block of any larger class;
// and if none is, it frees the spare and looks again. Caller holds the
// shard lock.
func (sh *shard) alloc(size int64) int64 {
	if v := atomic.LoadUint32(sh.spare()); v != 0 {
		b := sh.linked(v)
		have, st, pf := sh.header(b)
		if st != stateSpare {
			panic(corruption{sh, "the spare word names a block that is not the spare", b})
		}
		if have >= size && have < size+minBlock {
			storeDerived32(sh.spare(), 0)
			sh.setHeader(b, have, stateInFlight, pf)
			return b
		}
	}
	if b := sh.allocFree(size); b != noBlock || !sh.dropSpare() {
		return b
	}
	return sh.allocFree(size)
}

// allocFree is alloc from the free lists.
func (sh *shard) allocFree(size int64) int64 {
	for m := atomic.LoadUint32(sh.freeMap()) >> sizeClass(size) << sizeClass(size); m != 0; m &= m - 1 {
		c := bits.TrailingZeros32(m)
		for b, n := sh.linked(atomic.LoadUint32(sh.listHead(c))), 1; b != noBlock; b, n = sh.nextListed(b), n+1 {
			if s := sh.listed(b, n); s >= size {
				sh.take(b, s, size)
				return b
			}
		}
	}
	return noBlock
}

// take turns the free block b of have bytes into an in-flight block of
// size bytes, splitting off the rest if it makes a block.
func (sh *shard) take(b, have, size int64) {
	sh.listRemove(b, have)
	_, _, pf := sh.header(b)
	if rest := have - size; rest >= minBlock {
		sh.setHeader(b+size, rest, stateFree, false)
		sh.setHeader(b, size, stateInFlight, pf)
		sh.listInsert(b+size, rest)
	} else {
		size = have
		sh.setHeader(b, size, stateInFlight, pf)
		sh.setPrevFree(b+size, false)
	}
	sh.addI64(sHeapUsed, size)
}

// spare is the shard's word naming its spare block (link form; 0: none).
func (sh *shard) spare() *uint32 { return sh.u32(sSpare) }

// release gives back the in-flight block b, which no index slot refers to:
// a block of up to spareMax bytes becomes the shard's spare, kept whole
// and off the free lists for the next allocation of its size (the spare
// it replaces is freed), a larger one is freed. The spare is counted in
// the heap's used bytes, and anything that needs the free lists to hold
// all free space (an allocation that found no block, making room,
// defragmenting) frees it first (dropSpare). A SIGKILL at any step leaves
// blocks that no slot refers to and that are not free, which recovery
// frees. Caller holds the shard lock.
func (sh *shard) release(b int64) {
	size, _, pf := sh.header(b)
	if size > spareMax {
		sh.freeBlock(b)
		return
	}
	old := sh.linked(atomic.LoadUint32(sh.spare()))
	sh.setHeader(b, size, stateSpare, pf)
	storeDerived32(sh.spare(), link(b))
	if old != noBlock {
		sh.freeBlock(old)
	}
}

// dropSpare frees the shard's spare, if it has one, and reports whether
// it had. Caller holds the shard lock.
func (sh *shard) dropSpare() bool {
	b := sh.linked(atomic.LoadUint32(sh.spare()))
	if b == noBlock {
		return false
	}
	storeDerived32(sh.spare(), 0)
	sh.freeBlock(b)
	return true
}

// freeBlock frees the in-flight or spare block b and merges it with free
// neighbours. Caller holds the shard lock.
func (sh *shard) freeBlock(b int64) {
	size, st, pf := sh.header(b)
	if st == stateFree || st == stateLive {
		panic(corruption{sh, "a block to free is free or live (the spare word names it?)", b})
	}
	sh.addI64(sHeapUsed, -size)
	if next := b + size; next < sh.heapSize {
		if ns, nst, _ := sh.header(next); nst == stateFree {
			sh.listRemove(next, ns)
			size += ns
			sh.setHeader(b, size, stateInFlight, pf)
		}
	}
	start := b
	if pf {
		// The block before, found by its footer: a free block of that size.
		if b < minBlock {
			panic(corruption{sh, "the heap's first block says the block before it is free", b})
		}
		ps := int64(atomic.LoadUint64(sh.hu64(b - 8)))
		if ps < minBlock || ps > b {
			panic(corruption{sh, "a free block's footer steps outside the heap", b})
		}
		start = b - ps
		s, st, ppf := sh.header(start)
		if s != ps || st != stateFree {
			panic(corruption{sh, "a footer does not lead to a free block of its size", start})
		}
		sh.listRemove(start, ps)
		size += ps
		sh.setHeader(start, size, stateFree, ppf)
	} else {
		sh.setHeader(b, size, stateFree, false)
	}
	sh.listInsert(start, size)
	sh.setPrevFree(start+size, true)
}

// initHeap makes the heap one free block.
func (sh *shard) initHeap() {
	for c := 0; c < nClasses; c++ {
		storeDerived32(sh.listHead(c), 0)
	}
	storeDerived32(sh.freeMap(), 0)
	storeDerived32(sh.spare(), 0)
	sh.setHeader(0, sh.heapSize, stateFree, false)
	sh.listInsert(0, sh.heapSize)
	storeDerivedI64(sh.i64(sHeapUsed), 0)
}
