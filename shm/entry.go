package shm

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/pierrec/lz4/v4"

	"github.com/ephpm/ephpm/contract"
)

// A live block holds one entry after its header word:
//
//	[8:16)   expireAt  int64   CLOCK_MONOTONIC ns; 0: no expiry
//	[16:20)  access    uint32  coarse clock (ms) at the last write or read (LRU)
//	[20:24)  meta      uint32  stored value length | flagCompressed | flagPinned | flagRead
//	[24:28)  keyLen    uint32
//	[28:32)  holder    uint32  tag of the process holding a session's lock (see holderDead); 0: none
//	[32:...) the key, padding to 8 bytes, the stored value
//
// The stored value is the value, or with flagCompressed its length as 4
// little-endian bytes followed by its lz4 block (as memstore stores it). An
// entry is written while its block is in flight, before any index slot refers to
// it, and never changes afterwards except expireAt, access and flagRead.
//
// A lock granted with contract.Step.Bound (a session's lock granted to the
// session handler, a lock taken with ephpm_kv_lock(bound: true)) records
// its holder: the request holding it runs in that process, so once the
// process is dead (killed by php-fpm's request_terminate_timeout, a
// reload, a crash) the lock has lapsed as if its TTL had passed, for every
// call that looks at it (lapsed), and the next waiter gets it when it looks
// again (at most maxWaitSleep later), not a lock TTL later. A refresh of
// the hold keeps the record (rwlock.go). Other locks record none: they
// outlive the process that took them by design.
const (
	entryHeader    = 32
	metaLenMask    = 1<<29 - 1
	flagCompressed = 1 << 29
	flagPinned     = 1 << 30 // never evicted: a lock (SetNX) or a pinned prefix
	flagRead       = 1 << 31 // session data read since it was written (session.go)
)

func align8(n int64) int64 { return (n + 7) &^ 7 }

// entrySize is the block size of an entry of keyLen and storedLen bytes.
func entrySize(keyLen, storedLen int) int64 {
	return max(align8(align8(entryHeader+int64(keyLen))+int64(storedLen)), minBlock)
}

func (sh *shard) entryExpireAt(b int64) int64 { return atomic.LoadInt64(sh.hi64(b + 8)) }
func (sh *shard) setEntryExpireAt(b, at int64) {
	storeRelI64(sh.hi64(b+8), at)
}
func (sh *shard) entryAccess(b int64) *uint32 { return sh.hu32(b + 16) }
func (sh *shard) entryMeta(b int64) uint32    { return atomic.LoadUint32(sh.hu32(b + 20)) }
func (sh *shard) entryKeyLen(b int64) int     { return int(atomic.LoadUint32(sh.hu32(b + 24))) }
func (sh *shard) entryPinned(b int64) bool    { return sh.entryMeta(b)&flagPinned != 0 }
func (sh *shard) entryHolder(b int64) uint32  { return atomic.LoadUint32(sh.hu32(b + 28)) }

// entryKey returns the key of the entry in b, as a view of the mapping:
// valid only while the shard lock is held. The key must lie in the heap
// (checked.go).
func (sh *shard) entryKey(b int64) string {
	n := int64(sh.entryKeyLen(b))
	if n > sh.heapSize-b-entryHeader {
		panic(corruption{sh, "an entry's key runs past the heap", b})
	}
	return unsafe.String((*byte)(sh.at(b+entryHeader)), n)
}

// entryStored returns the stored value of the entry in b, as a view of the
// mapping: valid only while the shard lock is held. The value must lie in
// the heap (checked.go).
func (sh *shard) entryStored(b int64) []byte {
	n := int64(sh.entryMeta(b) & metaLenMask)
	if n == 0 {
		return []byte{}
	}
	off := b + align8(entryHeader+int64(sh.entryKeyLen(b)))
	if n > sh.heapSize-off {
		panic(corruption{sh, "an entry's value runs past the heap", b})
	}
	return unsafe.Slice((*byte)(sh.at(off)), n)
}

// writeEntry fills the in-flight block b with an entry.
// holder is the tag of the lock's holder, 0 for none.
func (sh *shard) writeEntry(b int64, key string, stored []byte, flags uint32, expireAt int64, access, holder uint32) {
	storeDerivedI64(sh.hi64(b+8), expireAt)
	storeDerived32(sh.entryAccess(b), access)
	storeDerived32(sh.hu32(b+20), uint32(len(stored))|flags)
	storeDerived32(sh.hu32(b+24), uint32(len(key)))
	storeDerived32(sh.hu32(b+28), holder)
	copy(unsafe.Slice((*byte)(sh.at(b+entryHeader)), len(key)), key)
	if len(stored) > 0 {
		copy(sh.entryStored(b), stored)
	}
}

// logicalLen is the length of the entry's value as callers see it: a
// compressed value's length word, which no value memstore stores exceeds.
func (sh *shard) logicalLen(b int64) int {
	meta := sh.entryMeta(b)
	if meta&flagCompressed == 0 {
		return int(meta & metaLenMask)
	}
	stored := sh.entryStored(b)
	if len(stored) < 4 || binary.LittleEndian.Uint32(stored) > contract.MaxValueLen {
		panic(corruption{sh, "a compressed value has no length word, or a length no value has", b})
	}
	return int(binary.LittleEndian.Uint32(stored))
}

// readInto writes the entry's value into dst, exactly logicalLen long; a
// compressed value that does not decompress to that is damage
// (checked.go).
func (sh *shard) readInto(b int64, dst []byte) {
	stored := sh.entryStored(b)
	if sh.entryMeta(b)&flagCompressed == 0 {
		copy(dst, stored)
		return
	}
	if len(stored) < 4 {
		panic(corruption{sh, "a compressed value has no length word", b})
	}
	if n, err := lz4.UncompressBlock(stored[4:], dst); err != nil || n != len(dst) {
		panic(corruption{sh, "a compressed value does not decompress to its length", b})
	}
}

// valueEquals reports whether the entry's logical (decompressed) value
// equals v.
//
// An uncompressed value (a lock's token always is) is compared with one
// read of the meta word, its length taken from it and the bytes read in
// place: no second read of the word, and no branch on it beyond the flag.
func (sh *shard) valueEquals(b int64, v []byte) bool {
	if meta := sh.entryMeta(b); meta&flagCompressed == 0 {
		if int(meta&metaLenMask) != len(v) {
			return false
		}
		off := b + align8(entryHeader+int64(sh.entryKeyLen(b)))
		if int64(len(v)) > sh.heapSize-off {
			panic(corruption{sh, "an entry's value runs past the heap", b})
		}
		return string(unsafe.Slice((*byte)(sh.at(off)), len(v))) == string(v)
	}
	if sh.logicalLen(b) != len(v) {
		return false
	}
	buf := make([]byte, len(v))
	sh.readInto(b, buf)
	return bytes.Equal(buf, v)
}

// hashSeed is a segment's secret for the key hash: four words drawn from
// crypto/rand when the segment is made, kept in its header (hSeed) and
// read by every process that maps it. Every choice a key's hash makes (its
// shard, its index slot and tag, its fence bucket, its wait slot's key)
// depends on them, so that nobody who does not know them (a client
// choosing session ids, cache keys built from request data) can compute
// keys that meet in one shard or one index chain; and every process of the
// segment, knowing them, hashes a key alike.
type hashSeed [4]uint64

// hash is key's 64-bit hash under the seed. Its low bits choose the shard,
// its high half is the index tag. The construction is wyhash's, the one
// Go's runtime uses for its maps where the CPU has no AES (memhashFallback),
// with the seed's words as its secrets: a key of up to 16 bytes is read as
// two (possibly overlapping) words and mixed by two 64x64->128-bit
// multiplies, with no loop over its bytes, so its cost does not hang on
// branches that PHP's executor, running between two calls, leaves
// mispredicted (xxhash's tail loop over a short key cost several times
// more from PHP than in a Go loop: docs/measurements.md). A longer key (a
// session id's) is folded 16 bytes at a time, and 48 at a time beyond 48
// bytes, by hashLong.
func (k *hashSeed) hash(key string) uint64 {
	n := len(key)
	var a, b uint64
	seed := k[0]
	switch {
	case n > 16:
		return k.hashLong(key)
	case n >= 8:
		a, b = load64(key, 0), load64(key, n-8)
	case n >= 4:
		a, b = uint64(load32(key, 0)), uint64(load32(key, n-4))
	case n > 0:
		a = uint64(key[0])<<16 | uint64(key[n>>1])<<8 | uint64(key[n-1])
	}
	return mix(mix(a^k[1], b^seed)^k[2], uint64(n)^k[3])
}

// hashLong is hash for a key of more than 16 bytes.
func (k *hashSeed) hashLong(key string) uint64 {
	n := len(key)
	seed, p := k[0], key
	if len(p) > 48 {
		s1, s2 := seed, seed
		for ; len(p) > 48; p = p[48:] {
			seed = mix(load64(p, 0)^k[1], load64(p, 8)^seed)
			s1 = mix(load64(p, 16)^k[2], load64(p, 24)^s1)
			s2 = mix(load64(p, 32)^k[3], load64(p, 40)^s2)
		}
		seed ^= s1 ^ s2
	}
	for ; len(p) > 16; p = p[16:] {
		seed = mix(load64(p, 0)^k[1], load64(p, 8)^seed)
	}
	// The last 16 bytes of the key, which may overlap those folded.
	a, b := load64(key, n-16), load64(key, n-8)
	return mix(mix(a^k[1], b^seed)^k[2], uint64(n)^k[3])
}

// mix folds the 128-bit product of a and b into 64 bits.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// load64 and load32 read s[i:] little-endian; the compiler makes each one
// load.
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func load32(s string, i int) uint32 {
	s = s[i : i+4]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

func tagOfHash(h uint64) uint32 {
	if t := uint32(h >> 32); t != 0 {
		return t
	}
	return 1
}

var compressors = sync.Pool{New: func() any { return new(lz4.Compressor) }}

// storedForm returns what is stored for value: its lz4 form with the
// length prefix when on, value is at least minSize bytes and that is
// smaller, else value itself.
func storedForm(value []byte, on bool, minSize int) ([]byte, uint32) {
	if !on || len(value) < minSize || len(value) < 16 {
		return value, 0
	}
	buf := make([]byte, 4+lz4.CompressBlockBound(len(value)))
	c := compressors.Get().(*lz4.Compressor)
	n, err := c.CompressBlock(value, buf[4:])
	compressors.Put(c)
	if err != nil || n == 0 || 4+n >= len(value) {
		return value, 0
	}
	binary.LittleEndian.PutUint32(buf, uint32(len(value)))
	return buf[:4+n], flagCompressed
}
