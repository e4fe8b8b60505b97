package memstore

import (
	"bytes"
	"encoding/binary"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// build makes a new block for key and value: compressed with lz4 when
// compression is on, the value is at least the configured minimum size,
// and the compressed form (with its 4-byte length prefix) is smaller.
func (s *Store) build(key string, value []byte, flags uint32, expireAt int64) block {
	access := s.lru.Load()
	if cfg := s.mem.compression(); cfg.on && len(value) >= cfg.minSize {
		if b := buildCompressed(key, value, flags, expireAt, access); b != nil {
			return b
		}
	}
	b, dst := newBlock(key, len(value), flags, expireAt, access)
	copy(dst, value)
	return b
}

// buildsPlainSmall reports whether build would make a recyclable block for
// key and value: a small value that compression leaves alone.
func (s *Store) buildsPlainSmall(key string, value []byte) bool {
	if valueOffset(len(key))+len(value) > recycleMax {
		return false
	}
	cfg := s.mem.compression()
	return !cfg.on || len(value) < cfg.minSize
}

var compressors = sync.Pool{New: func() any { return new(lz4.Compressor) }}

var scratch = sync.Pool{New: func() any { return new([]byte) }}

func buildCompressed(key string, value []byte, flags uint32, expireAt int64, access uint32) block {
	bufp := scratch.Get().(*[]byte)
	defer scratch.Put(bufp)
	bound := 4 + lz4.CompressBlockBound(len(value))
	if cap(*bufp) < bound {
		*bufp = make([]byte, bound)
	}
	buf := (*bufp)[:bound]
	c := compressors.Get().(*lz4.Compressor)
	n, err := c.CompressBlock(value, buf[4:])
	compressors.Put(c)
	if err != nil || n == 0 || 4+n >= len(value) {
		return nil // incompressible, or not smaller: store it plain
	}
	binary.LittleEndian.PutUint32(buf, uint32(len(value)))
	b, dst := newBlock(key, 4+n, flags|flagCompressed, expireAt, access)
	copy(dst, buf[:4+n])
	return b
}

// logicalLen is the length of b's value as the caller sees it.
func logicalLen(b block) int {
	if !blockFlags(b, flagCompressed) {
		return blockStoredLen(b)
	}
	return int(binary.LittleEndian.Uint32(blockStored(b)))
}

// readInto writes b's value into dst, which is exactly logicalLen(b) long.
// It may run without b's shard lock (see block).
func readInto(b block, dst []byte) {
	stored, meta := blockStoredUnlocked(b)
	if meta&flagCompressed == 0 {
		copy(dst, stored)
		return
	}
	// The block was compressed by build from a value of this length, so it
	// decompresses to exactly that: an error here would be memory
	// corruption, and a panic is the right answer (the bridge turns it
	// into "outcome unknown").
	if n, err := lz4.UncompressBlock(stored[4:], dst); err != nil || n != len(dst) {
		panic("kv: corrupt compressed block")
	}
}

// logicalValue returns b's value: the stored bytes, or a decompressed copy.
func logicalValue(b block) []byte {
	if !blockFlags(b, flagCompressed) {
		return blockStored(b)
	}
	v := make([]byte, logicalLen(b))
	readInto(b, v)
	return v
}

// valueEquals compares b's logical (decompressed) value with v.
func valueEquals(b block, v []byte) bool {
	return logicalLen(b) == len(v) && bytes.Equal(logicalValue(b), v)
}

// valueEqualsHeld is valueEquals for a caller that holds shard mutex a
// (and c, if not nil) and releases them explicitly rather than by a defer
// (see logicalValueHeld); a nil a is a caller whose defer releases them.
func valueEqualsHeld(b block, v []byte, a, c *sync.Mutex) bool {
	if !blockFlags(b, flagCompressed) {
		return bytes.Equal(blockStored(b), v)
	}
	return logicalLen(b) == len(v) && bytes.Equal(decompressHeld(b, a, c), v)
}

// logicalValueHeld is logicalValue for a caller that holds shard mutex a
// (and c, if not nil) and releases them explicitly rather than by a
// defer: a compressed value is decompressed, and a corrupt one panics
// (readInto), so then it releases them on the panic's way out and the
// shard stays usable once the bridge has recovered the panic. A plain
// value is returned in place, with nothing that panics, and no defer.
func logicalValueHeld(b block, a, c *sync.Mutex) []byte {
	if !blockFlags(b, flagCompressed) {
		return blockStored(b)
	}
	return decompressHeld(b, a, c)
}

// decompressHeld is logicalValue of compressed block b that releases a
// (and c, if not nil) if it panics. It is a function of its own so that
// the plain path of valueEqualsHeld and logicalValueHeld has no defer.
func decompressHeld(b block, a, c *sync.Mutex) []byte {
	done := false
	defer func() {
		if !done && a != nil {
			a.Unlock()
			if c != nil {
				c.Unlock()
			}
		}
	}()
	v := logicalValue(b)
	done = true
	return v
}
