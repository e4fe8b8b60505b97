package contract

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRateRingCountsEachInterval(t *testing.T) {
	r := NewRateRing(make([]uint64, RateWords))
	iv := int64(RateInterval)
	base := 1000 * iv
	total := RateCounts{}
	tick := func(at int64) { r.Tick(at, func() RateCounts { return total }) }

	tick(base + 1)
	total.Hits, total.Sets = 10, 1
	tick(base + iv/2) // the same interval: not written again
	tick(base + iv + 3)
	total.Hits, total.Sets = 30, 2
	tick(base + 2*iv)
	total.Hits = 36                // three intervals pass without a tick:
	tick(base + 5*iv + 1)          // 6 hits spread over them
	got := r.Read(base + 5*iv + 2) // newest first
	require.Len(t, got, 5)
	assert.Equal(t, []uint64{2, 2, 2, 20, 10}, []uint64{got[0].Hits, got[1].Hits, got[2].Hits, got[3].Hits, got[4].Hits})
	assert.Equal(t, uint64(1), got[3].Sets)

	// A slot whose writer died midway (its epoch word cleared) is a gap.
	r.slot(epochAt(base + 2*iv))[0] = 0
	got = r.Read(base + 5*iv + 2)
	require.Len(t, got, 5)
	assert.Equal(t, uint64(26), got[0].Hits+got[1].Hits+got[2].Hits+got[3].Hits, "spread from the snapshot before the gap")

	// Snapshots older than the ring are not read.
	total.Hits = 100
	tick(base + (5+RateBuckets-1)*iv)
	got = r.Read(base + (5+RateBuckets-1)*iv)
	require.Len(t, got, RateBuckets-1, "from the oldest snapshot the ring holds")
	var sum uint64
	for _, c := range got {
		sum += c.Hits
	}
	assert.Equal(t, uint64(64), sum, "the hits since that snapshot, spread")
}

// A writer paused between its claim and its write (SIGSTOP, a frozen
// cgroup) stores totals of a later interval: a snapshot above a later one
// is dropped, and the counts around it are spread over its interval.
func TestRateRingDropsASnapshotAboveALaterOne(t *testing.T) {
	r := NewRateRing(make([]uint64, RateWords))
	iv := int64(RateInterval)
	base := 1000 * iv
	for i, hits := range []uint64{0, 50, 40, 60} { // 50: the paused writer's
		r.Tick(base+int64(i)*iv, func() RateCounts { return RateCounts{Hits: hits} })
	}
	got := r.Read(base + 3*iv + 1)
	require.Len(t, got, 3)
	assert.Equal(t, []uint64{20, 20, 20}, []uint64{got[0].Hits, got[1].Hits, got[2].Hits})
}

// Damage cannot make Read fail or Tick stop: a slot holding an epoch that
// does not map to it is skipped (two slots with one epoch divided by
// zero), and a latest-epoch word far in the future is taken back.
func TestRateRingSurvivesDamage(t *testing.T) {
	r := NewRateRing(make([]uint64, RateWords))
	iv := int64(RateInterval)
	base := 1000 * iv
	r.Tick(base, func() RateCounts { return RateCounts{Hits: 1} })
	e := epochAt(base)
	copy(r.slot(e+1), r.slot(e)) // the same epoch in the next slot
	assert.NotPanics(t, func() { r.Read(base + iv) })
	r.w[0] = e + 1000*RateBuckets
	r.Tick(base+iv, func() RateCounts { return RateCounts{Hits: 3} })
	got := r.Read(base + iv + 1)
	require.Len(t, got, 1)
	assert.Equal(t, uint64(2), got[0].Hits)
}
