package memstore

import (
	"crypto/rand"
	"encoding/binary"
	"unsafe"
)

// hashSeed is a store's seed for hash, drawn from crypto/rand when the store
// is made. Every choice a key's hash makes (its shard, its table slot, its
// fence and expiry entries) depends on it and on the runtime's own random
// hash key, so which keys collide differs from process to process and from
// store to store, and nobody outside (a client choosing session ids, cache
// keys built from request data) can compute keys that meet in one shard or
// one probe run.
type hashSeed uintptr

func newHashSeed() hashSeed {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24 and later)
	return hashSeed(binary.LittleEndian.Uint64(b[:]))
}

// hash is key's hash under seed: runtime.memhash, the seeded hash of Go's
// own maps (AES-based where the CPU has AES, keyed by a random key drawn
// when the process starts; wyhash with random secrets elsewhere).
// hash/maphash.String reaches the same function through two more calls,
// which cost measurably more per lock pair from PHP (docs/measurements.md).
func (seed hashSeed) hash(key string) uint64 {
	return uint64(memhash(unsafe.Pointer(unsafe.StringData(key)), uintptr(seed), uintptr(len(key))))
}

// memhash is the runtime's, which keeps its signature for the packages
// that link to it (go.dev/issue/67401).
//
//go:linkname memhash runtime.memhash
//go:noescape
func memhash(p unsafe.Pointer, h, s uintptr) uintptr
