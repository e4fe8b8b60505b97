package shm

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ephpm/ephpm/contract"
)

// The status page's figures beyond the counters: the rate ring
// (contract.RateRing) in the header's unused space, and each shard's use of
// its heap.
//
// The ring lies at hRates, past the session rule, in space a layout-8
// segment leaves zero: a library without the ring leaves it alone, so it
// needs no new layout version (a process of such a library only does not
// tick). Every process attached to the segment ticks it each rateTick,
// by a timer (no goroutine of its own), and Stats ticks before it reads.
const (
	hRates   = hSessLock + maxSessPrefix + 8 // [contract.RateWords]uint64
	rateTick = time.Second
	// largestFreeWalk bounds the walk of the largest blocks' free list
	// that finds the largest: a longer list gives the largest of its first.
	largestFreeWalk = 1024
)

// The ring fits the header.
var _ [headerSize - (hRates + contract.RateWords*8)]struct{}

func (s *Store) rateRing() contract.RateRing {
	return contract.NewRateRing(unsafe.Slice((*uint64)(s.g.ptr(hRates)), contract.RateWords))
}

// rateTotals sums the shards' counters with a load each, no lock: the
// ring is a view over minutes, and a count that lands a moment later lands
// in the next interval.
func (s *Store) rateTotals() contract.RateCounts {
	var f [7]uint64
	for i := range s.shards {
		sh := &s.shards[i]
		for k, c := range [...]int{cHits, cMisses, cSets, cSetNXWins, cSetNXLosses, cEvictions, cExpirations} {
			f[k] += atomic.LoadUint64(sh.u64(sCounters + int64(c)*8))
		}
	}
	return contract.RateCounts{Hits: f[0], Misses: f[1], Sets: f[2], SetNXWins: f[3], SetNXLosses: f[4], Evictions: f[5], Expirations: f[6]}
}

// armRates arms this process's next tick of the ring: Open, then each
// tick. Each tick is a timer of its own, kept where Close finds it.
func (s *Store) armRates() {
	s.rateTimer.Store(time.AfterFunc(rateTick, s.tickRates))
}

// tickRates ticks the ring and arms the next tick, until the store is
// closed or its file gone (a tick that runs as Close stops the timer arms
// one more, which finds the store closed).
func (s *Store) tickRates() {
	tk, err := s.enter()
	if err != nil {
		return
	}
	defer s.leave(tk)
	s.rateRing().Tick(expiryNow(), s.rateTotals)
	s.armRates()
}

// statsMore adds to st the rates, the shards and the facts. Caller has
// entered.
func (s *Store) statsMore(st *contract.Stats) {
	now := expiryNow()
	r := s.rateRing()
	r.Tick(now, s.rateTotals)
	st.RateInterval, st.Rates = contract.RateInterval, r.Read(now)
	st.Facts = fmt.Sprintf("segment %s: %d shards of %d bytes of heap and %d index slots, layout %d, %d processes attached",
		s.g.path, s.g.shards, s.g.heapSize, s.g.indexSlots, layoutVersion, s.g.attached())
	st.Shards = make([]contract.ShardStats, len(s.shards))
	for i := range s.shards {
		sh := &s.shards[i]
		ss := &st.Shards[i]
		ss.Keys = int64(atomic.LoadUint32(sh.u32(sEntries)))
		ss.BytesUsed = atomic.LoadInt64(sh.used())
		ss.HeapSize = s.g.heapSize
		ss.HeapFree = s.g.heapSize - atomic.LoadInt64(sh.i64(sHeapUsed))
		ss.LargestFree = -1 // unknown: a damaged shard's free lists are not walked
		if sh.isBroken() {
			continue
		}
		if err := s.inShard(sh, func() { ss.LargestFree = sh.largestFree() }); err != nil {
			ss.LargestFree = -1
		}
	}
}

// largestFree is the size of the largest free block: the largest on the
// list of the largest class that has one (of its first largestFreeWalk).
// Caller holds the lock.
func (sh *shard) largestFree() int64 {
	m := atomic.LoadUint32(sh.freeMap())
	if m == 0 {
		return 0
	}
	var largest int64
	b := sh.linked(atomic.LoadUint32(sh.listHead(bits.Len32(m) - 1)))
	for n := 0; b != noBlock && n < largestFreeWalk; n++ {
		largest = max(largest, sh.listed(b, n))
		b = sh.nextListed(b)
	}
	return largest
}
