package shm

// Words of a shard are changed only under its lock, so a store to one needs
// no atomic read-modify-write and no full fence: it must only be one store
// (never torn: a recoverer or a lock-free reader sees the old word or the
// new one) and reach memory in program order with the others (a process
// killed between two stores leaves the first, never the second alone: the
// write protocol's steps rely on that). storeRel64 and storeRel32 are such
// release stores. On amd64 (store order is total there) they are a plain
// MOV in assembly: a call the compiler can neither reorder nor drop, at a
// fifth of the cost of sync/atomic's XCHG; elsewhere they are sync/atomic's
// stores. Words other processes write without the lock (lock words, wait
// slots, the process table, the segment's settings and LRU clock) keep
// sync/atomic.

import "unsafe"

func storeRelI64(p *int64, v int64) { storeRel64((*uint64)(unsafe.Pointer(p)), uint64(v)) }
