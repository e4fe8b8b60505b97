package memstore

import (
	"github.com/ephpm/ephpm/contract"
)

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

// Stats returns the store's figures now. It takes each shard lock in turn,
// and ticks the rate ring first (a reader sees the current interval).
func (s *Store) Stats() contract.Stats {
	now := s.now()
	s.rates.Tick(now, s.rateTotals)
	st := s.stats()
	st.RateInterval, st.Rates = contract.RateInterval, s.rates.Read(now)
	return st
}

// rateTotals are the counters the rate ring keeps, now.
func (s *Store) rateTotals() contract.RateCounts { return contract.RateTotals(s.stats()) }

func (s *Store) stats() contract.Stats {
	st := contract.Stats{InstanceID: s.id}
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
