package shm

import (
	"fmt"
	"unsafe"

	"github.com/ephpm/ephpm/contract"
)

// The segment is one file mapped MAP_SHARED by every process that names it.
// Every structure in it is addressed by offset from the mapping's start, so
// each process may map it at a different address. Its regions, in order:
//
//	header       headerSize bytes: identity, layout, segment-wide settings
//	proc table   procSlots × procSlotSize
//	wait table   waitSlots × waitSlotSize
//	shards       S × shardHeaderSize: lock word, counters, free lists
//	indexes      S × indexSlots × 8 bytes
//	heaps        S × heapSize bytes
const (
	magic = 0x4d48534d50485045 // "EPHPMSHM" little-endian
	// layoutVersion 2: session data has a budget of its own (per-shard
	// tallies, the session rule and budget in the header).
	// 3: each shard has a word of non-empty free lists (sFreeMap), which a
	// version-2 library would not keep.
	// 4: a key of up to 16 bytes hashes by hashKey's own mix, not
	// xxhash, so it has another shard and index tag than in version 3.
	// 5: a shard keeps a spare block (sSpare, state stateSpare), which a
	// version-4 library would read as corruption.
	// 6: gets read with no lock, against each shard's count of its lock's
	// releases (sSeq), which a version-5 library would not keep.
	// 7: an entry's word at [28:32) is its holder (entry.go), which a
	// version-6 library leaves as whatever the block held before.
	// 8: the key hash is seeded by the segment's own random words (hSeed),
	// so every key has another shard, index tag and fence bucket than in
	// version 7; beside them, their check word (hSeedCheck). (The check
	// word came after version 8 was first committed but before any
	// release, in the header's unused space: no released library reads
	// version 8.)
	layoutVersion = 8
	headerSize    = 4096
	readyValue    = 0x52454459 // "REDY"

	// Header fields.
	hMagic       = 0
	hVersion     = 8
	hHeaderSize  = 12
	hSegSize     = 16
	hShards      = 24
	hProcSlots   = 28
	hWaitSlots   = 32
	hIndexSlots  = 36
	hProcOff     = 40
	hWaitOff     = 48
	hShardOff    = 56
	hIndexOff    = 64
	hHeapOff     = 72
	hHeapSize    = 80
	hLimit       = 88
	hPolicy      = 96  // atomic: contract.Policy
	hCompression = 100 // atomic: 0 none, 1 lz4
	hMinSize     = 104 // atomic: compression minimum size
	hReady       = 108 // readyValue once the segment is initialised; written last
	hInstance    = 112 // 16 random bytes
	hRecoveries  = 128 // atomic: shards recovered from a dead owner
	hLRUClock    = 136 // atomic: coarse clock (ms) stamped on reads
	hBudgetLock  = 140 // uint32: the session budget's lock word (session.go)
	hSessLimit   = 144 // atomic int64: the session budget in force, bytes; 0: none
	hSessSetting = 152 // atomic int64: MemoryConfig.SessionLimit as configured
	hSeed        = 160 // [4]uint64: the key hash's seed (hashSeed), random, fixed when the segment is made
	hSeedCheck   = 192 // uint64: seedCheck of hSeed, written with it
	hUsed        = 256 // [maxShards]int64, atomic: bytes charged per shard
	// hAnchor (atomic) is the ident of the process the segment lives for
	// (lifecycle.go), 0 for none. Like magic and version it stays at this
	// offset in every layout version, so that a library can remove a stale
	// segment of a layout it cannot otherwise read.
	hAnchor = 1024
	// The session rule (session.go), fixed when the segment is made: the
	// lengths of the data and lock prefixes, then their bytes.
	hSessDataLen = 1536
	hSessLockLen = 1540
	hSessData    = 1544
	hSessLock    = hSessData + maxSessPrefix
	// After the session rule, hRates (rates.go): the rate ring, in space
	// a segment of this layout leaves zero until a process ticks it.

	// maxSessPrefix is the longest session prefix a segment records.
	maxSessPrefix = 256

	maxShards = 32
	procSlots = 4096
	waitSlots = 1024
	// DefaultMemoryLimit is the limit of a segment created without one.
	DefaultMemoryLimit = 64 << 20
	// MinMemoryLimit is the smallest limit a segment is created with.
	MinMemoryLimit = 256 << 10
)

// layout is where each region of a segment lies.
type layout struct {
	segSize    int64
	shards     int
	indexSlots int // per shard, a power of two
	procOff    int64
	waitOff    int64
	shardOff   int64
	indexOff   int64
	heapOff    int64
	heapSize   int64 // per shard
	limit      int64
	// chunk is the credit a shard reserves beyond a write's need (credit.go),
	// worked out once: a write's accounting uses it, and a division costs
	// more than the rest of that accounting.
	chunk int64
}

// planLayout sizes a segment for a memory limit: the heaps together hold
// a quarter more than the limit (headroom, so that a shard fuller than
// average still takes writes that fit the store), split over a power of two
// of shards of at least 1 MiB each (at most maxShards); each index has one
// slot per 64 heap bytes, rounded up to a power of two.
func planLayout(limit int64) layout {
	l := layout{limit: limit}
	heaps := limit + limit/4
	l.shards = maxShards
	for l.shards > 1 && heaps/int64(l.shards) < 1<<20 {
		l.shards /= 2
	}
	l.heapSize = (heaps/int64(l.shards) + 4095) &^ 4095
	l.indexSlots = 64
	for int64(l.indexSlots)*64 < l.heapSize {
		l.indexSlots *= 2
	}
	off := int64(headerSize)
	l.procOff = off
	off += procSlots * procSlotSize
	l.waitOff = off
	off += waitSlots * waitSlotSize
	l.shardOff = off
	off += int64(l.shards) * shardHeaderSize
	off = (off + 4095) &^ 4095
	l.indexOff = off
	off += int64(l.shards) * int64(l.indexSlots) * 8
	off = (off + 4095) &^ 4095
	l.heapOff = off
	off += int64(l.shards) * l.heapSize
	l.segSize = off
	l.chunk = creditChunk(limit, l.shards)
	return l
}

// segment is one process's mapping of a segment file.
type segment struct {
	path string
	fd   int    // the open file, with this process's shared flock; -1: none
	mem  []byte // the mapping: never handed to the garbage collector's heap
	base unsafe.Pointer
	layout
	// sess is the segment's session rule (from its header), which every
	// process applies alike: it decides where a key hashes.
	sess contract.SessionRule
	// seed is the segment's key hash seed (from its header), copied here
	// so that a hash reads it from this process's memory.
	seed hashSeed
	// private: the segment is this process's own anonymous mapping
	// (OpenPrivate), with no file.
	private bool
}

func (g *segment) ptr(off int64) unsafe.Pointer { return unsafe.Add(g.base, off) }

// bytes and str are views of n bytes of the mapping at off.
func (g *segment) bytes(off int64, n int) []byte {
	return unsafe.Slice((*byte)(g.ptr(off)), n)
}
func (g *segment) str(off int64, n int) string { return unsafe.String((*byte)(g.ptr(off)), n) }
func (g *segment) u32(off int64) *uint32       { return (*uint32)(g.ptr(off)) }
func (g *segment) u64(off int64) *uint64       { return (*uint64)(g.ptr(off)) }
func (g *segment) i64(off int64) *int64        { return (*int64)(g.ptr(off)) }

// instanceID formats the segment's 16 random bytes as a UUID.
func (g *segment) instanceID() string {
	b := unsafe.Slice((*byte)(g.ptr(hInstance)), 16)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
