package shm

import (
	"sync/atomic"
	"unsafe"
)

// Each shard's index is an open-addressing hash table of indexSlots 8-byte
// slots with linear probing:
//
//	0              empty
//	^0             tombstone (a removed entry)
//	tag<<32 | b/8  the live block at heap offset b of a key whose hash tag is tag
//
// tag is the high half of the key's 64-bit hash (never 0), and a key's
// probe starts at tag & (indexSlots-1). Every change is one 8-byte atomic
// store: insert into an empty or tombstone slot, replace the offset (the
// commit of a write), write a tombstone. So the index is consistent at
// every instant and is the one record of which entries exist. The counts
// of entries and tombstones are derived.
//
// Tombstones go back to empty when they end a run (the next slot is empty),
// and a shard with too many is compacted in place (compact), which moves
// entries back along their probe path, always to a lower slot; a crash
// mid-way leaves an entry in two slots, which recovery resolves (see
// recover.go).
const (
	slotEmpty = 0
	slotTomb  = ^uint64(0)
)

func (sh *shard) slot(i int) *uint64 { return (*uint64)(unsafe.Add(sh.indexAt, int64(i)*8)) }
func slotTag(v uint64) uint32        { return uint32(v >> 32) }
func slotBlock(v uint64) int64       { return int64(uint32(v)) * 8 }
func makeSlot(tag uint32, b int64) uint64 {
	return uint64(tag)<<32 | uint64(b/8)
}

func (sh *shard) home(tag uint32) int { return int(tag) & (sh.indexSlots - 1) }

// dist is how far slot j lies along the probe path that starts at home.
func (sh *shard) dist(home, j int) int { return (j - home) & (sh.indexSlots - 1) }

// lookup finds key, whose hash tag is tag: its slot and block, or pos -1.
// ins is the first slot an insertion of key may use (a tombstone or the
// empty slot that ends the probe), or -1 if there is none.
func (sh *shard) lookup(tag uint32, key string) (pos int, b int64, ins int) {
	mask := sh.indexSlots - 1
	ins = -1
	for i, n := sh.home(tag), 0; n <= mask; i, n = (i+1)&mask, n+1 {
		v := atomic.LoadUint64(sh.slot(i))
		switch {
		case v == slotEmpty:
			if ins < 0 {
				ins = i
			}
			return -1, noBlock, ins
		case v == slotTomb:
			if ins < 0 {
				ins = i
			}
		case slotTag(v) == tag:
			if b := sh.blockOf(v); sh.entryKey(b) == key {
				return i, b, ins
			}
		}
	}
	return -1, noBlock, ins
}

// roomFor reports whether the index takes one more entry (at most three
// quarters of the slots are live), compacting it first if live entries and
// tombstones fill seven eighths. A compaction moves slots: positions found
// before it are stale. Caller holds the shard lock.
func (sh *shard) roomFor() bool {
	n := sh.indexSlots
	entries, tombs := int(atomic.LoadUint32(sh.u32(sEntries))), int(atomic.LoadUint32(sh.u32(sTombs)))
	if entries+1 > n*3/4 {
		return false
	}
	if entries+tombs+1 > n*7/8 {
		sh.compact()
	}
	return true
}

// insertAt puts tag and b into slot ins, found empty or a tombstone by
// lookup.
func (sh *shard) insertAt(ins int, tag uint32, b int64) {
	if atomic.LoadUint64(sh.slot(ins)) == slotTomb {
		sh.addU32(sTombs, -1)
	}
	storeRel64(sh.slot(ins), makeSlot(tag, b))
	sh.addU32(sEntries, 1)
}

// removeAt makes slot pos a tombstone, then empties the tombstones that end
// its run.
func (sh *shard) removeAt(pos int) {
	mask := sh.indexSlots - 1
	storeRel64(sh.slot(pos), slotTomb)
	sh.addU32(sEntries, -1)
	sh.addU32(sTombs, 1)
	for atomic.LoadUint64(sh.slot((pos+1)&mask)) == slotEmpty && atomic.LoadUint64(sh.slot(pos)) == slotTomb {
		storeRel64(sh.slot(pos), slotEmpty)
		sh.addU32(sTombs, -1)
		pos = (pos - 1) & mask
	}
}

// compact turns tombstones into empty slots by moving later entries of
// the run back along their probe paths (backward shift). A move copies
// the entry first and overwrites its old slot only after, so every entry
// is reachable at every instant, at times from two slots (recovery keeps
// the one nearer its probe start, recover.go).
//
// An entry only ever moves to a lower slot. The one move backward shift
// would make to a higher one is across the wrap: an entry in the first
// slots whose probe path starts in the last ones (its run goes on past
// the last slot), into a tombstone among those. compact leaves such an
// entry where it is and the tombstone in its path as it is, and that
// shift ends there: the probe paths through the tombstone stay unbroken
// (a tombstone, unlike an empty slot, does not end a probe), and the
// entries after it could reach the tombstone only across the wrap too.
// Lookups are as before: a moved entry lands on its own probe path before
// its old slot, with no empty slot between. Why: a walk
// (Scan, scan.go) visits the slots from the top down, and so misses no
// entry live for the whole walk only if no entry moves from the slots it
// has yet to visit to those it has visited.
//
// What that costs: the tombstones left lie in the last slots, on the
// probe path of an entry past the wrap, at most that entry's distance from
// its probe start (a few slots: a probe path longer than a handful is rare
// with the seeded hash, and a long one would be for a full index, which
// roomFor keeps below seven eighths). They are not lost: an insert whose
// probe path meets one takes it (lookup's ins), removeAt empties them once
// the entries past the wrap are gone (the run then ends at them), and a
// later compaction empties those no wrapped entry needs any more. Caller
// holds the lock.
func (sh *shard) compact() {
	n := sh.indexSlots
	mask := n - 1
	for i := 0; i < n; i++ {
		if atomic.LoadUint64(sh.slot(i)) != slotTomb {
			continue
		}
		hole, last := i, uint64(slotEmpty)
		for j := (i + 1) & mask; j != i; j = (j + 1) & mask {
			v := atomic.LoadUint64(sh.slot(j))
			if v == slotEmpty {
				break
			}
			if v != slotTomb && sh.dist(sh.home(slotTag(v)), j) >= sh.dist(hole, j) {
				if j < hole {
					last = slotTomb // across the wrap: it stays, hole stays in its path
					break
				}
				storeRel64(sh.slot(hole), v)
				compactStored()
				hole = j
			}
		}
		storeRel64(sh.slot(hole), last)
		compactStored()
	}
	sh.recount()
}

// compactHook, set by a test, is called after each store compact makes:
// a panic there leaves the index as a SIGKILL at that instant would.
var compactHook func()

func compactStored() {
	if compactHook != nil {
		compactHook()
	}
}

// recount derives the entry and tombstone counts from the slots.
func (sh *shard) recount() {
	var entries, tombs uint32
	for i := 0; i < sh.indexSlots; i++ {
		switch atomic.LoadUint64(sh.slot(i)) {
		case slotEmpty:
		case slotTomb:
			tombs++
		default:
			entries++
		}
	}
	storeDerived32(sh.u32(sEntries), entries)
	storeDerived32(sh.u32(sTombs), tombs)
}
