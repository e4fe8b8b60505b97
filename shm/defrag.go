package shm

import (
	"cmp"
	"slices"
	"sync/atomic"
	"unsafe"
)

// Defragmentation. A shard whose free bytes would hold a write, but in no
// one block, moves live entries out of the stretch of its heap that holds
// the fewest live bytes, so that the stretch becomes one free block, before
// anything is evicted or refused. Each move is the write protocol with the
// entry's own bytes as the new value: the copy is allocated (outside the
// stretch) and written in flight, the old block is marked in flight, one
// index store refers to the copy (the commit), the copy is marked live, the
// old block is freed. A SIGKILL anywhere leaves one of the states recovery
// knows (see recover.go), and the entry reads the same either way.

type heapBlock struct {
	off, size int64
	live      bool
}

type window struct {
	first, last int // block indexes
	live        int64
}

// defragTries is how many of the windows with the fewest live bytes are
// tried.
const defragTries = 8

// defragment tries to make a free block of at least size bytes in sh and
// reports whether there is one now. It looks at every window of whole
// blocks spanning size bytes, and empties the first of those with the
// fewest live bytes whose entries all fit, best fit and largest first, in
// the free blocks outside it. Caller holds the lock.
func (s *Store) defragment(sh *shard, size int64) bool {
	free := s.g.heapSize - atomic.LoadInt64(sh.i64(sHeapUsed))
	if free < size {
		return false
	}
	var blocks []heapBlock
	for b := int64(0); b < s.g.heapSize; {
		bs, st, _ := sh.header(b)
		if st == stateInFlight {
			return false // not ours to move: the shard is being changed
		}
		blocks = append(blocks, heapBlock{b, bs, st == stateLive})
		b += bs
	}
	var wins []window
	var live int64
	for i, j := 0, 0; i < len(blocks); i++ {
		for j < len(blocks) && blocks[j].off+blocks[j].size-blocks[i].off < size {
			if blocks[j].live {
				live += blocks[j].size
			}
			j++
		}
		if j == len(blocks) {
			break
		}
		w := live // [i, j] spans size bytes
		if blocks[j].live {
			w += blocks[j].size
		}
		if w <= free-size {
			wins = append(wins, window{i, j, w})
		}
		if blocks[i].live {
			live -= blocks[i].size
		}
	}
	slices.SortFunc(wins, func(a, b window) int { return cmp.Compare(a.live, b.live) })
	for _, w := range wins[:min(len(wins), defragTries)] {
		if moves := s.planMoves(sh, blocks, w); moves != nil {
			return s.moveAll(sh, moves, blocks[w.first].off, blocks[w.last].off+blocks[w.last].size) &&
				s.shardHasRoom(sh, heapFull, size)
		}
	}
	return false
}

// planMoves returns the live blocks of w, largest first, if each fits (best
// fit, as allocBestFit will place it) in the free blocks outside w; nil if
// they do not.
func (s *Store) planMoves(sh *shard, blocks []heapBlock, w window) []int64 {
	var holes []int64
	for i, b := range blocks {
		if !b.live && (i < w.first || i > w.last) {
			holes = append(holes, b.size)
		}
	}
	var moves []heapBlock
	for _, b := range blocks[w.first : w.last+1] {
		if b.live {
			moves = append(moves, b)
		}
	}
	slices.SortFunc(moves, func(a, b heapBlock) int { return cmp.Compare(b.size, a.size) })
	offs := make([]int64, 0, len(moves))
	for _, m := range moves {
		need := sh.entryNeed(m.off)
		best := -1
		for i, h := range holes {
			if h >= need && (best < 0 || h < holes[best]) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		if rest := holes[best] - need; rest >= minBlock {
			holes[best] = rest
		} else {
			holes[best] = 0
		}
		offs = append(offs, m.off)
	}
	return offs
}

func (sh *shard) entryNeed(b int64) int64 {
	return entrySize(sh.entryKeyLen(b), int(sh.entryMeta(b)&metaLenMask))
}

// moveAll moves the entries in blocks moves out of [lo, hi), then frees
// their old blocks (after every move, so that no merge changes the free
// blocks the moves are placed in), and reports whether every one moved.
// Caller holds the lock.
func (s *Store) moveAll(sh *shard, moves []int64, lo, hi int64) bool {
	var old []int64
	ok := true
	for _, b := range moves {
		if !s.moveEntry(sh, b, lo, hi) {
			ok = false
			break
		}
		old = append(old, b)
	}
	for _, b := range old {
		sh.freeBlock(b) // not kept as the spare: the stretch is to be one free block
	}
	return ok
}

// moveEntry moves the live entry in block b to a block outside [lo, hi),
// leaving b in flight (unreferenced: the caller frees it, and recovery
// would), and reports whether it could. Caller holds the lock.
func (s *Store) moveEntry(sh *shard, b, lo, hi int64) bool {
	key := sh.entryKey(b)
	tag := tagOfHash(sh.g.hashOf(key))
	pos, found, _ := sh.lookup(tag, key)
	if found != b {
		return false
	}
	need := sh.entryNeed(b)
	if need > sh.blockSize(b) {
		panic(corruption{sh, "an entry is larger than its block", b})
	}
	nb := sh.allocBestFit(need, lo, hi)
	if nb == noBlock {
		return false
	}
	copy(unsafe.Slice((*byte)(sh.at(nb+8)), need-8), unsafe.Slice((*byte)(sh.at(b+8)), need-8))
	sh.setState(b, stateInFlight)
	storeRel64(sh.slot(pos), makeSlot(tag, nb)) // the commit
	sh.setState(nb, stateLive)
	sh.reaccount(b, nb, sh.g.kindOf(sh.entryKey(nb)))
	return true
}

// allocBestFit is alloc taking the smallest free block that holds size
// and does not overlap [lo, hi).
func (sh *shard) allocBestFit(size, lo, hi int64) int64 {
	best, bestSize := int64(noBlock), int64(0)
	for c := sizeClass(size); c < nClasses; c++ {
		for b, n := sh.linked(atomic.LoadUint32(sh.listHead(c))), 1; b != noBlock; b, n = sh.nextListed(b), n+1 {
			if s := sh.listed(b, n); s >= size && (b+s <= lo || b >= hi) && (best == noBlock || s < bestSize) {
				best, bestSize = b, s
			}
		}
		if best != noBlock {
			break // a smaller class holds only smaller blocks
		}
	}
	if best != noBlock {
		sh.take(best, bestSize, size)
	}
	return best
}
