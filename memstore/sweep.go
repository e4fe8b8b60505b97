// The sweeper: it removes expired entries in the background, a batch of
// expiry items per shard lock hold, so that memory held by entries nobody
// reads again comes back.

package memstore

import (
	"time"
)

// compactExpiries rebuilds the heap from the table once stale items (of
// replaced or deleted blocks) outnumber live ones, which bounds the heap at
// about twice the number of entries with a TTL, plus a quarter of the
// table's slots: the rebuild scans every slot, and that slack keeps its cost
// per pushed item constant however many entries have no TTL.
func (sh *shard) compactExpiries() {
	if len(sh.expiries) <= 2*sh.volatile+len(sh.t.hashes)/4+64 {
		return
	}
	sh.expiries = sh.expiries[:0]
	for i, b := range sh.t.blocks {
		if b != nil && blockExpireAt(b) != 0 {
			sh.expiries = append(sh.expiries, expiryItem{at: blockExpireAt(b), h: sh.t.hashes[i]})
		}
	}
	sh.expiries.init()
}

// Sweep removes every entry that is expired now and returns how many it
// removed. The sweeper calls it periodically; tests call it directly.
func (s *Store) Sweep() int {
	removed := 0
	for i := range s.shards {
		removed += s.sweepShard(&s.shards[i])
	}
	return removed
}

func (s *Store) sweepShard(sh *shard) int {
	removed := 0
	for {
		sh.mu.Lock()
		now := s.now()
		n := 0
		for ; n < sweepBatch && len(sh.expiries) > 0 && sh.expiries[0].at <= now; n++ {
			// The item may be stale: remove only entries with its hash
			// that are expired now.
			removed += s.removeExpired(sh, sh.expiries.pop().h, now)
		}
		sh.mu.Unlock()
		if n < sweepBatch {
			return removed
		}
	}
}

// removeExpired removes the entries whose key hashes to h and that are
// expired at now. Caller holds sh.mu.
func (s *Store) removeExpired(sh *shard, h uint32, now int64) int {
	removed := 0
	for i := sh.t.nextWithHash(h, -1); i >= 0; i = sh.t.nextWithHash(h, i) {
		if blockExpired(sh.t.blocks[i], now) {
			s.removeAt(sh, i, true)
			removed++
			// The removal shifted the run back, and may have shrunk the
			// table, which moves every slot: scan the run again.
			i = -1
		}
	}
	return removed
}

func (s *Store) sweepLoop(interval time.Duration) {
	defer s.sweeping.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			now := s.now()
			s.lru.Store(uint32((now - s.origin) / int64(time.Millisecond)))
			s.rates.Tick(now, s.rateTotals)
			s.Sweep()
		}
	}
}

const sweepBatch = 128
