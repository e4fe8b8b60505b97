package contract

import "time"

// Stats is a snapshot of a store's figures, as every backend reports them.
// Counters count since the store was made;
// each shard's figures are exact at the moment Stats reads them under its
// lock, but the shards are read one after another, not as one snapshot.
type Stats struct {
	InstanceID  string // a UUID: different stores have different ids
	Keys        int64  // entries, including expired ones not yet removed
	BytesUsed   int64  // memory charged to entries (memstore: see entryOverhead)
	MemoryLimit int64  // 0: no limit
	// SessionBytes is the part of BytesUsed charged to session data, and
	// SessionLimit its budget in force (0: none); see MemoryConfig.
	SessionBytes, SessionLimit int64
	Eviction                   string // the eviction policy's name
	Compression                bool

	Hits, Misses      uint64 // Get and GetInto
	Sets              uint64 // Set and successful SetGuarded
	Evictions         uint64 // entries removed to make room
	Expirations       uint64 // expired entries removed (lazily or by the sweeper)
	SetNXWins         uint64
	SetNXLosses       uint64
	DelIfEqMatches    uint64
	DelIfEqMismatches uint64

	// Processes is how many processes share the store (a shared-memory
	// segment's attached processes); 0 for a store of one process.
	Processes int64

	// RateInterval is the length of the intervals of Rates, 0 for a store
	// that keeps no rates (Redis); Rates are the counts of the last ones,
	// newest first (RateRing.Read: none before a store's second interval).
	RateInterval time.Duration
	Rates        []RateCounts
	// Shards are a shared-memory segment's shards, each's use of its
	// heap; nil for a store without.
	Shards []ShardStats
	// Facts say what the store is, for a person: a segment's file and
	// shape, a Redis server's version and mode ("" for none).
	Facts string
}

// ShardStats is one shard of a shared-memory segment.
type ShardStats struct {
	Keys      int64 `json:"keys"`       // entries, counting expired ones not yet reclaimed
	BytesUsed int64 `json:"bytes_used"` // memory charged to entries
	HeapSize  int64 `json:"heap_size"`  // bytes of the shard's heap
	HeapFree  int64 `json:"heap_free"`  // bytes of its free blocks
	// LargestFree is the largest free block, the longest value a write
	// can place without moving entries: HeapFree much larger than it is a
	// fragmented heap. -1: unknown (the shard is damaged).
	LargestFree int64 `json:"largest_free"`
}
