// Package contract is what every ephpm store promises, in one place: the
// errors a call fails with and what each says about the store's state, the
// limits on arguments and the checks that enforce them, the outcomes of a
// conditional write, the Step that takes, checks or releases a lock and
// acts on a key in one atomic step, the read/write-lock rules (a reader
// record's encoding and the decisions on it), the session rule, the
// eviction classes and their order, the memory setting, counter arithmetic, and the figures a store reports.
//
// The stores apply these rules each in its own atomic step: the
// in-process store (package memstore) under a shard's mutex, the
// shared-memory store (package shm) under a shard's lock word, the Redis
// store (package redisstore) in one script per call. Keeping the rules
// here, apart from any store, is what makes them the same everywhere: a
// store imports this package, never another store.
//
// Nothing here keeps state of its own except RateRing, which works on
// memory its caller gives it. Package contract imports nothing from the
// project, so every package may import it.
package contract
