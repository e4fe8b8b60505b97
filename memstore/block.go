package memstore

import (
	"sync/atomic"
	"unsafe"
)

// A block is one entry in one allocation, which holds no pointers (so the
// garbage collector never scans it):
//
//	[0:8)    expireAt  int64   monotonic ns; 0 = no expiry (written under the shard's write lock)
//	[8:12)   access    uint32  LRU clock at the last write or read (under the shard lock)
//	[12:16)  meta      uint32  stored value length (low 29 bits) | flagCompressed | flagPinned | flagRead
//	[16:18)  keyLen    uint16
//	[18:...) key, then padding to a multiple of 8, then the stored value
//
// The value starts 8-byte aligned because copying from an odd address runs
// at a third of the speed (docs/measurements.md, "kv: aligned values").
//
// A stored value is the value itself, or with flagCompressed a 4-byte
// little-endian length of the value followed by its lz4 block.
//
// Two kinds of block, told apart by the block itself (recyclable):
//   - A small block holding a plain value is recyclable: a write may reuse
//     it in place for a value of the same rounded size, and a removed one
//     becomes its shard's spare for the next small write. So it is read
//     only under its shard's lock; allocating a block per write cost as
//     much as the rest of Set (docs/measurements.md, "kv: recycled blocks").
//   - Any other block never changes once built except its expiry and
//     access fields and flagRead, so a reader may copy its value after
//     dropping the lock (a 64 KiB copy or an lz4 decompression does not
//     hold a shard). flagRead is set atomically, and such a reader loads
//     meta atomically (blockStoredUnlocked); under the lock a plain load
//     is ordered by the lock.
type block = unsafe.Pointer

const (
	blockHeader    = 18
	metaLenMask    = 1<<29 - 1
	flagCompressed = 1 << 29
	flagPinned     = 1 << 30 // never evicted: a lock (SetNX) or a pinned prefix
	// flagRead marks session data read since it was written (see markRead).
	flagRead = 1 << 31
)

// recycleMax is the largest recyclable block.
const recycleMax = 256

// recyclable reports whether b may be reused (see block): it holds a plain
// value and is at most recycleMax bytes. Reuse keeps both true.
func recyclable(b block) bool {
	return !blockFlags(b, flagCompressed) && blockSize(b) <= recycleMax
}

// reusable reports whether a block of size bytes (the blockSize of key and
// a stored value) can be written into b: b is recyclable and was allocated
// for the same size rounded to 8 bytes, so reuse never changes how much
// memory the entry really holds against what it is charged.
func reusable(b block, size int) bool {
	return b != nil && recyclable(b) && (blockSize(b)+7)&^7 == (size+7)&^7
}

// newBlock allocates a block for key and a stored value of storedLen bytes
// and returns it with the slice to write the stored value into. access is
// the LRU clock now: a new entry counts as just used.
func newBlock(key string, storedLen int, flags uint32, expireAt int64, access uint32) (block, []byte) {
	buf := make([]byte, valueOffset(len(key))+storedLen)
	return initBlock(block(unsafe.Pointer(&buf[0])), key, storedLen, flags, expireAt, access)
}

// initBlock writes the header and key of a block, new or reused, and
// returns the slice to write the stored value into.
func initBlock(b block, key string, storedLen int, flags uint32, expireAt int64, access uint32) (block, []byte) {
	*(*int64)(b) = expireAt
	*(*uint32)(unsafe.Add(b, 8)) = access
	*(*uint32)(unsafe.Add(b, 12)) = uint32(storedLen) | flags
	*(*uint16)(unsafe.Add(b, 16)) = uint16(len(key))
	copy(unsafe.Slice((*byte)(unsafe.Add(b, blockHeader)), len(key)), key)
	if storedLen == 0 {
		return b, nil // an empty value ends the allocation: no pointer past it
	}
	return b, unsafe.Slice((*byte)(unsafe.Add(b, valueOffset(len(key)))), storedLen)
}

// valueOffset is where the stored value starts in a block whose key has
// keyLen bytes.
func valueOffset(keyLen int) int { return (blockHeader + keyLen + 7) &^ 7 }

func blockExpireAt(b block) int64          { return *(*int64)(b) }
func setBlockExpireAt(b block, at int64)   { *(*int64)(b) = at }
func blockAccess(b block) *uint32          { return (*uint32)(unsafe.Add(b, 8)) }
func blockMetaPtr(b block) *uint32         { return (*uint32)(unsafe.Add(b, 12)) }
func blockMeta(b block) uint32             { return *blockMetaPtr(b) }
func blockKeyLen(b block) int              { return int(*(*uint16)(unsafe.Add(b, 16))) }
func blockFlags(b block, f uint32) bool    { return blockMeta(b)&f != 0 }
func blockExpired(b block, now int64) bool { at := blockExpireAt(b); return at != 0 && at <= now }
func blockStoredLen(b block) int           { return int(blockMeta(b) & metaLenMask) }
func blockSize(b block) int                { return valueOffset(blockKeyLen(b)) + blockStoredLen(b) }
func blockKey(b block) string {
	return unsafe.String((*byte)(unsafe.Add(b, blockHeader)), blockKeyLen(b))
}

// blockStored returns the stored value (possibly compressed). Caller
// holds b's shard lock.
func blockStored(b block) []byte { return storedIn(b, blockMeta(b)) }

// blockStoredUnlocked is blockStored for a reader without the lock (see
// block), with b's meta, loaded atomically.
func blockStoredUnlocked(b block) ([]byte, uint32) {
	meta := atomic.LoadUint32(blockMetaPtr(b))
	return storedIn(b, meta), meta
}

func storedIn(b block, meta uint32) []byte {
	n := int(meta & metaLenMask)
	if n == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Add(b, valueOffset(blockKeyLen(b)))), n)
}

// touch records a read for the LRU, writing only when the clock moved so
// that hot keys read from many cores do not bounce a cache line needlessly.
func touch(b block, clock uint32) {
	if p := blockAccess(b); atomic.LoadUint32(p) != clock {
		atomic.StoreUint32(p, clock)
	}
}
