package kv

import "sync/atomic"

// counters are one shard's; Stats adds them up. They change only under the
// shard lock (see bump) and are atomic because Stats reads them without it.
type counters struct {
	keys                              atomic.Int64
	hits, misses                      atomic.Uint64
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
	Eviction    string // the eviction policy's name
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
	st := Stats{InstanceID: s.id, BytesUsed: s.mem.used.Load()}
	cfg := s.MemoryConfig()
	st.MemoryLimit, st.Eviction, st.Compression = cfg.Limit, cfg.Policy.String(), cfg.Compression
	for i := range s.shards {
		c := &s.shards[i].c
		st.Keys += c.keys.Load()
		st.Hits += c.hits.Load()
		st.Misses += c.misses.Load()
		st.Sets += c.sets.Load()
		st.Evictions += c.evictions.Load()
		st.Expirations += c.expirations.Load()
		st.SetNXWins += c.setNXWins.Load()
		st.SetNXLosses += c.setNXLosses.Load()
		st.DelIfEqMatches += c.delIfEqMatches.Load()
		st.DelIfEqMismatches += c.delIfEqMismatches.Load()
	}
	return st
}

// bump adds n to a counter, and bumpKeys to the key count. The caller
// holds the counter's shard lock, so a load and a store suffice: unlike an
// atomic add, they take no bus lock.
func bump(c *atomic.Uint64, n uint64) { c.Store(c.Load() + n) }

func bumpKeys(c *atomic.Int64, n int64) { c.Store(c.Load() + n) }
