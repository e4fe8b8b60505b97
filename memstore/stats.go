package memstore

import "time"

// counters are one shard's; Stats adds them up. They are plain integers
// guarded by the shard lock, which every operation that counts holds
// anyway: an atomic store on amd64 is a locked XCHG, and eight of them on
// the lock path cost more than the store's own work (docs/measurements.md,
// "kv: counters").
type counters struct {
	hits, misses                      uint64
	sets, evictions, expirations      uint64
	setNXWins, setNXLosses            uint64
	delIfEqMatches, delIfEqMismatches uint64
}

// Stats is a snapshot of the store's figures. Counters count since New;
// each shard's figures are exact at the moment Stats reads them under its
// lock, but the shards are read one after another, not as one snapshot.
type Stats struct {
	InstanceID  string // a UUID: different stores have different ids
	Keys        int64  // entries, including expired ones not yet removed
	BytesUsed   int64  // memory charged to entries (see entryOverhead)
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

// Stats returns the store's figures now. It takes each shard lock in turn,
// and ticks the rate ring first (a reader sees the current interval).
func (s *Store) Stats() Stats {
	now := s.now()
	s.rates.Tick(now, s.rateTotals)
	st := s.stats()
	st.RateInterval, st.Rates = RateInterval, s.rates.Read(now)
	return st
}

// rateTotals are the counters the rate ring keeps, now.
func (s *Store) rateTotals() RateCounts { return RateTotals(s.stats()) }

func (s *Store) stats() Stats {
	st := Stats{InstanceID: s.id}
	cfg := s.MemoryConfig()
	st.MemoryLimit, st.Eviction, st.Compression = cfg.Limit, cfg.Policy.String(), cfg.Compression
	st.SessionLimit = s.mem.sessionLimit.Load()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		c := &sh.c
		st.Keys += int64(sh.t.n)
		st.BytesUsed += sh.used
		st.SessionBytes += sh.sessionUsed
		st.Hits += c.hits
		st.Misses += c.misses
		st.Sets += c.sets
		st.Evictions += c.evictions
		st.Expirations += c.expirations
		st.SetNXWins += c.setNXWins
		st.SetNXLosses += c.setNXLosses
		st.DelIfEqMatches += c.delIfEqMatches
		st.DelIfEqMismatches += c.delIfEqMismatches
		sh.mu.Unlock()
	}
	return st
}
