package contract

import (
	"slices"
	"sync/atomic"
	"time"
)

// Rates over the last minutes, for the status page: a ring of snapshots of
// a store's cumulative counters, one per RateInterval, from which the
// counts of each interval are the differences. It holds counters only,
// and is read and written with single atomic loads, stores and one
// compare-and-swap: it lives in Go memory for the in-process store and in
// a shared-memory segment's header, where a process killed at any
// instant must leave nothing that another misreads and no lock held.
//
// Tick elects one writer per interval: whoever moves the ring's latest
// epoch word to the current interval's epoch by a CAS writes that
// interval's slot. It clears the slot's epoch word before it writes the
// totals and sets it after, so a reader that finds the word unchanged
// around its reads of the totals has a whole snapshot, and a writer killed
// midway leaves a slot no reader takes (a gap, spread over by the
// snapshots around it). Snapshots are taken when a process ticks (the
// in-process store's sweeper; every process attached to a segment, each
// second), so a slot's snapshot is up to a tick late into its interval.
const (
	// RateInterval is how long each interval of the ring is.
	RateInterval = 10 * time.Second
	// RateBuckets is how many intervals the ring keeps (5 minutes).
	RateBuckets = 30
	rateFields  = 7
	// RateWords is the ring's size in 64-bit words: the latest epoch,
	// then RateBuckets slots of an epoch and rateFields totals.
	RateWords = 1 + RateBuckets*(1+rateFields)
)

// RateCounts are the counters the ring keeps: totals in a snapshot,
// counts in an interval.
type RateCounts struct {
	Hits        uint64 `json:"hits"`
	Misses      uint64 `json:"misses"`
	Sets        uint64 `json:"sets"`
	SetNXWins   uint64 `json:"set_nx_wins"`
	SetNXLosses uint64 `json:"set_nx_losses"`
	Evictions   uint64 `json:"evictions"`
	Expirations uint64 `json:"expirations"`
}

func (c RateCounts) fields() [rateFields]uint64 {
	return [rateFields]uint64{c.Hits, c.Misses, c.Sets, c.SetNXWins, c.SetNXLosses, c.Evictions, c.Expirations}
}

func countsOf(f [rateFields]uint64) RateCounts {
	return RateCounts{f[0], f[1], f[2], f[3], f[4], f[5], f[6]}
}

// RateTotals are st's counters as the ring keeps them.
func RateTotals(st Stats) RateCounts {
	return RateCounts{st.Hits, st.Misses, st.Sets, st.SetNXWins, st.SetNXLosses, st.Evictions, st.Expirations}
}

// RateRing is a ring over RateWords words (Go memory, or a segment's).
type RateRing struct{ w []uint64 }

// NewRateRing is the ring over w, which must hold RateWords words, zero
// for an empty ring.
func NewRateRing(w []uint64) RateRing {
	if len(w) != RateWords {
		panic("kv: a rate ring of the wrong size")
	}
	return RateRing{w}
}

// epochAt is the epoch of the interval that holds now (ns on a monotonic
// clock all the ring's processes share): never 0, which marks a slot
// empty.
func epochAt(now int64) uint64 { return uint64(now/int64(RateInterval)) + 1 }

func (r RateRing) slot(e uint64) []uint64 {
	at := 1 + int(e%RateBuckets)*(1+rateFields)
	return r.w[at : at+1+rateFields]
}

// Tick writes the current interval's snapshot of totals() if nobody has:
// one atomic load when somebody has.
func (r RateRing) Tick(now int64, totals func() RateCounts) {
	e := epochAt(now)
	last := atomic.LoadUint64(&r.w[0])
	// A latest epoch further ahead than the ring reaches is damage (no
	// process's clock is that far ahead), and would stop every writer for
	// good: it is taken back to now.
	if (last >= e && last <= e+RateBuckets) || !atomic.CompareAndSwapUint64(&r.w[0], last, e) {
		return
	}
	s := r.slot(e)
	atomic.StoreUint64(&s[0], 0)
	for i, v := range totals().fields() {
		atomic.StoreUint64(&s[1+i], v)
	}
	atomic.StoreUint64(&s[0], e)
}

// Read returns the counts of the complete intervals the ring covers,
// newest first: element 0 is the interval before the ring's newest
// snapshot, which is the current interval's once a process has ticked in
// it (Stats ticks before it reads). Counts between two snapshots further
// apart than one interval are spread evenly over the intervals between.
// Intervals older than the ring's oldest snapshot are not returned.
func (r RateRing) Read(now int64) []RateCounts {
	cur := epochAt(now)
	type snap struct {
		e uint64
		f [rateFields]uint64
	}
	var snaps []snap
	for b := 0; b < RateBuckets; b++ {
		s := r.w[1+b*(1+rateFields) : 1+(b+1)*(1+rateFields)]
		e := atomic.LoadUint64(&s[0])
		// A slot holds only the epochs that map to it: any other is
		// damage, and two slots with one epoch would divide by zero below.
		if e == 0 || e > cur || cur-e >= RateBuckets || e%RateBuckets != uint64(b) {
			continue
		}
		var f [rateFields]uint64
		for i := range f {
			f[i] = atomic.LoadUint64(&s[1+i])
		}
		if atomic.LoadUint64(&s[0]) == e {
			snaps = append(snaps, snap{e, f})
		}
	}
	slices.SortFunc(snaps, func(a, b snap) int { return int(int64(a.e) - int64(b.e)) })
	// Counters only grow, so a snapshot above a later one is wrong: a
	// writer that was paused between its claim and its write (SIGSTOP, a
	// frozen cgroup) wrote totals of a later interval. It is dropped, and
	// the counts between its neighbours are spread over its interval too.
	kept := make([]snap, 0, len(snaps))
	for i := len(snaps) - 1; i >= 0; i-- {
		if len(kept) > 0 && !below(snaps[i].f, kept[len(kept)-1].f) {
			continue
		}
		kept = append(kept, snaps[i])
	}
	slices.Reverse(kept)
	snaps = kept
	var out []RateCounts
	for i := len(snaps) - 1; i > 0; i-- {
		a, b := snaps[i-1], snaps[i]
		span := b.e - a.e
		var each, rest [rateFields]uint64
		for k := range each {
			d := b.f[k] - a.f[k] // a.f <= b.f: see kept above
			each[k], rest[k] = d/span, d%span
		}
		for j := uint64(0); j < span; j++ {
			c := each
			if j == 0 { // the newest of them takes the remainder
				for k := range c {
					c[k] += rest[k]
				}
			}
			out = append(out, countsOf(c))
		}
	}
	return out
}

// below reports whether every counter of a is at most b's.
func below(a, b [rateFields]uint64) bool {
	for k := range a {
		if a[k] > b[k] {
			return false
		}
	}
	return true
}
