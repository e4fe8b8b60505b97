//go:build !amd64

package shm

import "sync/atomic"

func storeRel64(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
func storeRel32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

func storeDerived64(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
func storeDerived32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

func cpuRelax() {}

// readsWithoutLock is false: read.go's argument needs fences here that it
// does not make.
const readsWithoutLock = false
