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
//
// Words whose order among a shard's stores does not matter take
// storeDerived64 and storeDerived32: counts and figures (recovery recomputes
// the derived ones; the counters and the sweep cursor are right in any
// order), free-list links and footers (derived: recovery rebuilds them
// from the walk), credit, LRU stamps, and the fields of an entry written
// into a block no index slot refers to yet (recovery frees such a block
// whatever it holds, as it does the value bytes copied there). They too
// must be single untorn stores, visible to the next holder of the lock
// (the release orders them) and, for an entry's fields, reach memory
// before the index store that publishes it: a release store (a call the
// compiler cannot move them past, and on amd64 stores reach memory in
// program order) does both. On amd64 they are plain stores the compiler
// inlines; elsewhere sync/atomic's, which are untorn on 32-bit targets too.

import "unsafe"

func storeRelI64(p *int64, v int64) { storeRel64((*uint64)(unsafe.Pointer(p)), uint64(v)) }

func storeDerivedI64(p *int64, v int64) { storeDerived64((*uint64)(unsafe.Pointer(p)), uint64(v)) }
