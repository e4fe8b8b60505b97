package memstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

func TestStatsCarryTheRates(t *testing.T) {
	now := int64(77) * int64(contract.RateInterval)
	s := New(Options{SweepInterval: -1, Now: func() int64 { return now }})
	defer s.Close()
	s.Stats()
	require.NoError(t, s.Set("a", []byte("v"), 0))
	s.Get("a")
	s.Get("b")
	now += int64(contract.RateInterval)
	st := s.Stats()
	require.Len(t, st.Rates, 1)
	assert.Equal(t, contract.RateCounts{Hits: 1, Misses: 1, Sets: 1}, st.Rates[0])
	now += int64(time.Minute)
	assert.Len(t, s.Stats().Rates, 7)
}
