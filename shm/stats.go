// The store's figures: Stats, the processes attached, recoveries from dead
// owners and the longest wait for one.

package shm

import (
	"sync/atomic"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// Stats fills contract.Stats as the in-process store does, taking each shard
// lock in turn. Attached reports the live processes attached.
func (s *Store) Stats() (contract.Stats, error) {
	tk, err := s.enter()
	if err != nil {
		return contract.Stats{}, err
	}
	defer s.leave(tk)
	cfg := s.memoryConfig()
	st := contract.Stats{InstanceID: s.g.instanceID(), MemoryLimit: cfg.Limit, SessionLimit: s.sessionLimit(),
		Eviction: cfg.Policy.String(), Compression: cfg.Compression}
	for i := range s.shards {
		sh := &s.shards[i]
		if err := s.lock(sh); err != nil {
			return contract.Stats{}, err
		}
		c := func(k int) uint64 { return atomic.LoadUint64(sh.u64(sCounters + int64(k)*8)) }
		st.Keys += int64(atomic.LoadUint32(sh.u32(sEntries)))
		st.BytesUsed += atomic.LoadInt64(sh.used())
		st.SessionBytes += atomic.LoadInt64(sh.sessUsed())
		st.Hits += c(cHits)
		st.Misses += c(cMisses)
		st.Sets += c(cSets)
		st.Evictions += c(cEvictions)
		st.Expirations += c(cExpirations)
		st.SetNXWins += c(cSetNXWins)
		st.SetNXLosses += c(cSetNXLosses)
		st.DelIfEqMatches += c(cDelIfEqMatches)
		st.DelIfEqMismatches += c(cDelIfEqMismatches)
		s.unlock(sh)
	}
	st.Processes = int64(s.g.attached())
	s.statsMore(&st)
	return st, nil
}

// Attached returns the number of live processes attached to the segment;
// 0 once the store is closed.
func (s *Store) Attached() int {
	tk, err := s.enter()
	if err != nil {
		return 0
	}
	defer s.leave(tk)
	return s.g.attached()
}

func (s *Store) noteDeadOwnerWait(d int64) {
	for {
		old := s.deadOwnerWait.Load()
		if d <= old || s.deadOwnerWait.CompareAndSwap(old, d) {
			return
		}
	}
}

// DeadOwnerWait returns the longest this process has waited for a shard
// whose owner had died, from the start of its wait until it had recovered
// the shard: the wait the recovery bound is about.
func (s *Store) DeadOwnerWait() time.Duration { return time.Duration(s.deadOwnerWait.Load()) }

// Recoveries returns how many times a shard of the segment was recovered
// from a dead owner since it was created; 0 once the store is closed.
func (s *Store) Recoveries() uint64 {
	tk, err := s.enter()
	if err != nil {
		return 0
	}
	defer s.leave(tk)
	return atomic.LoadUint64(s.g.u64(hRecoveries))
}
