package kv

import (
	"math/rand/v2"
	"unsafe"
)

// hashSeed is a store's seed for hash, drawn from the runtime's random
// source, so that which keys collide differs from process to process.
type hashSeed uintptr

func newHashSeed() hashSeed { return hashSeed(rand.Uint64()) }

// hash is key's hash under seed: runtime.memhash, the seeded hash of Go's
// own maps (AES-based where the CPU has AES). hash/maphash.String reaches
// the same function through two more calls, which cost ~3 ns per lock
// pair from PHP (docs/measurements.md).
func (seed hashSeed) hash(key string) uint64 {
	return uint64(memhash(unsafe.Pointer(unsafe.StringData(key)), uintptr(seed), uintptr(len(key))))
}

// memhash is the runtime's, which keeps its signature for the packages
// that link to it (go.dev/issue/67401).
//
//go:linkname memhash runtime.memhash
//go:noescape
func memhash(p unsafe.Pointer, h, s uintptr) uintptr
