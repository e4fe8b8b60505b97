package shm

import (
	"sync/atomic"
	"unsafe"
)

// A shard is self-contained: its lock word, counters and free-list heads
// (this header), an index and a heap. Everything but the counters is
// changed only under its lock; the derived figures (entries, tombstones,
// bytes, waiters, free lists) are recomputed when the shard is recovered.
const (
	shardHeaderSize = 512

	sLock       = 0   // uint32: the lock word (lock.go)
	sWaiters    = 4   // uint32: wait slots registered on this shard (derived)
	sTicket     = 8   // uint64: the next waiter's ticket
	sEntries    = 16  // uint32: live index slots (derived)
	sTombs      = 20  // uint32: tombstones (derived)
	sSweep      = 24  // uint32: the sweep cursor
	sBroken     = 28  // uint32: nonzero when recovery found the shard corrupt
	sEvictAll   = 32  // int64: evictable bytes of entries that are not session data (derived)
	sEvictTTL   = 40  // int64: the same, of entries with a TTL (derived)
	sHeapUsed   = 48  // int64: bytes of blocks not free (derived)
	sSeq        = 56  // uint64: the releases of the lock (read.go), in the lock word's line
	sCounters   = 64  // [nCounters]uint64
	sRecoveries = 160 // uint64: times this shard was recovered
	sCredit     = 168 // int64: bytes reserved against the limit beyond used (credit.go; derived)
	// Session data (session.go), all derived: the bytes charged to it, and
	// the evictable bytes of session data not read since written (new)
	// and read since (returned), all and with a TTL.
	sSessUsed    = 176
	sEvictNew    = 184
	sEvictNewTTL = 192
	sEvictRet    = 200
	sEvictRetTTL = 208
	sFreeMap     = 216 // uint32: bit c set while free list c is not empty (derived)
	sSpare       = 220 // uint32: the spare block (heap.go; off/8 + 1; 0: none; derived)
	sFreeLists   = 256 // [nClasses]uint32: free-list heads (off/8 + 1; 0: empty)
)

// Counters, as contract.Stats names them; changed under the shard lock, but for
// hits and misses, which reads with no lock count too (countRead).
const (
	cHits = iota
	cMisses
	cSets
	cSetNXWins
	cSetNXLosses
	cDelIfEqMatches
	cDelIfEqMismatches
	cEvictions
	cExpirations
	nCounters
)

// shard is this process's handle on one shard of the segment.
//
// Beside the offsets of its header, index and heap it keeps their
// addresses in this process's mapping (hdrAt, indexAt, heapAt: the
// mapping's base plus the offset, fixed while the store is open), so that
// a field's address is one load and an add. Through the offsets it was
// three dependent loads (sh.g, g.base, the offset), and the compiler
// repeats them after every atomic load or store of the segment, which a
// write makes dozens of (docs/measurements.md, 2026-12-05). They are this
// process's addresses, never stored in the segment.
type shard struct {
	g       *segment
	i       int
	hdr     int64 // offset of the header
	index   int64 // offset of the index
	heap    int64 // offset of the heap
	hdrAt   unsafe.Pointer
	indexAt unsafe.Pointer
	heapAt  unsafe.Pointer
	// heapSize and indexSlots are the segment's, copied here for the same
	// reason: the checks of every block and slot read them.
	heapSize   int64
	indexSlots int
}

func (g *segment) shard(i int) shard {
	sh := shard{g: g, i: i,
		hdr:   g.shardOff + int64(i)*shardHeaderSize,
		index: g.indexOff + int64(i)*int64(g.indexSlots)*8,
		heap:  g.heapOff + int64(i)*g.heapSize}
	sh.hdrAt, sh.indexAt, sh.heapAt = g.ptr(sh.hdr), g.ptr(sh.index), g.ptr(sh.heap)
	sh.heapSize, sh.indexSlots = g.heapSize, g.indexSlots
	return sh
}

func (sh *shard) u32(f int64) *uint32 { return (*uint32)(unsafe.Add(sh.hdrAt, f)) }
func (sh *shard) u64(f int64) *uint64 { return (*uint64)(unsafe.Add(sh.hdrAt, f)) }
func (sh *shard) i64(f int64) *int64  { return (*int64)(unsafe.Add(sh.hdrAt, f)) }

// at is the address of the heap's byte off; hu32, hu64 and hi64 the word
// there.
func (sh *shard) at(off int64) unsafe.Pointer { return unsafe.Add(sh.heapAt, off) }
func (sh *shard) hu32(off int64) *uint32      { return (*uint32)(sh.at(off)) }
func (sh *shard) hu64(off int64) *uint64      { return (*uint64)(sh.at(off)) }
func (sh *shard) hi64(off int64) *int64       { return (*int64)(sh.at(off)) }

// used is the bytes charged to this shard's entries, read by writers in
// every shard to check the memory limit.
func (sh *shard) used() *int64 { return sh.g.i64(hUsed + int64(sh.i)*8) }

func (sh *shard) count(c int) {
	p := sh.u64(sCounters + int64(c)*8)
	storeDerived64(p, atomic.LoadUint64(p)+1)
}

func (sh *shard) addI64(f int64, d int64) {
	p := sh.i64(f)
	storeDerivedI64(p, atomic.LoadInt64(p)+d)
}

func (sh *shard) addU32(f int64, d int32) {
	p := sh.u32(f)
	storeDerived32(p, uint32(int32(atomic.LoadUint32(p))+d))
}
