package kv

import "sync/atomic"

type counters struct {
	keys                              atomic.Int64
	sets, evictions, expirations      atomic.Uint64
	setNXWins, setNXLosses            atomic.Uint64
	delIfEqMatches, delIfEqMismatches atomic.Uint64
}

// Stats is a snapshot of the store's figures. Counters count since New;
// each is exact, but they are read one by one, not as one atomic snapshot.
type Stats struct {
	InstanceID  string // a UUID: different stores have different ids
	Keys        int64  // entries, including expired ones not yet removed
	BytesUsed   int64  // memory charged to entries (see entryOverhead)
	MemoryLimit int64  // 0: no limit
	Policy      Policy
	Compression bool

	Hits, Misses      uint64 // Get and GetInto
	Sets              uint64 // Set and successful SetGuarded
	Evictions         uint64 // entries removed to make room
	Expirations       uint64 // expired entries removed (lazily or by the sweeper)
	SetNXWins         uint64
	SetNXLosses       uint64
	DelIfEqMatches    uint64
	DelIfEqMismatches uint64
}

// Stats returns the store's figures now.
func (s *Store) Stats() Stats {
	st := Stats{
		InstanceID:        s.id,
		Keys:              s.counters.keys.Load(),
		BytesUsed:         s.mem.used.Load(),
		Sets:              s.counters.sets.Load(),
		Evictions:         s.counters.evictions.Load(),
		Expirations:       s.counters.expirations.Load(),
		SetNXWins:         s.counters.setNXWins.Load(),
		SetNXLosses:       s.counters.setNXLosses.Load(),
		DelIfEqMatches:    s.counters.delIfEqMatches.Load(),
		DelIfEqMismatches: s.counters.delIfEqMismatches.Load(),
	}
	cfg := s.MemoryConfig()
	st.MemoryLimit, st.Policy, st.Compression = cfg.Limit, cfg.Policy, cfg.Compression
	for i := range s.shards {
		st.Hits += s.shards[i].hits.Load()
		st.Misses += s.shards[i].misses.Load()
	}
	return st
}
