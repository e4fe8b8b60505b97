package kv

import (
	"testing"
	"time"

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

	// Snapshots older than the ring are not read; a counter that went
	// back reads as no count.
	total.Hits = 5
	tick(base + (5+RateBuckets-1)*iv)
	got = r.Read(base + (5+RateBuckets-1)*iv)
	require.Len(t, got, RateBuckets-1, "from the oldest snapshot the ring holds")
	for _, c := range got {
		assert.Zero(t, c.Hits)
	}
}

func TestStatsCarryTheRates(t *testing.T) {
	now := int64(77) * int64(RateInterval)
	s := New(Options{SweepInterval: -1, Now: func() int64 { return now }})
	defer s.Close()
	s.Stats()
	require.NoError(t, s.Set("a", []byte("v"), 0))
	s.Get("a")
	s.Get("b")
	now += int64(RateInterval)
	st := s.Stats()
	require.Len(t, st.Rates, 1)
	assert.Equal(t, RateCounts{Hits: 1, Misses: 1, Sets: 1}, st.Rates[0])
	now += int64(time.Minute)
	assert.Len(t, s.Stats().Rates, 7)
}
