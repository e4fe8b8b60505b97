package kv

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
}

// Stats returns the store's figures now. It takes each shard lock in turn.
func (s *Store) Stats() Stats {
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
