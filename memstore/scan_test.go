package memstore

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

// An entry live for the whole walk is returned, however the tables
// change between pages: they grow, shrink and shift entries back.
func TestScanMeetsEveryEntryLiveThroughoutWhileTablesChange(t *testing.T) {
	s := New(Options{SweepInterval: -1})
	defer s.Close()
	for i := 0; i < 3000; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("keep:%d", i), []byte("v"), 0))
	}
	seen := map[string]int{}
	var cursor uint64
	for round := 0; ; round++ {
		page, next, err := s.Scan("keep:", cursor, 7, false)
		require.NoError(t, err)
		for _, e := range page {
			seen[e.Key]++
		}
		// Churn: grow every table, then shrink it again.
		for i := 0; i < 40; i++ {
			require.NoError(t, s.Set(fmt.Sprintf("churn:%d:%d", round, i), []byte("x"), 0))
		}
		if round%3 == 2 {
			for r := round - 2; r <= round; r++ {
				for i := 0; i < 40; i++ {
					s.Del(fmt.Sprintf("churn:%d:%d", r, i))
				}
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	assert.Len(t, seen, 3000)
	for k, n := range seen {
		assert.Equal(t, 1, n, "%s once: its hash is passed once", k)
	}
}

func TestScanPagesHoldAboutCount(t *testing.T) {
	s := New(Options{SweepInterval: -1})
	defer s.Close()
	for i := 0; i < 500; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("k%d", i), []byte("v"), 0))
	}
	page, next, err := s.Scan("", 0, 10, false)
	require.NoError(t, err)
	assert.Len(t, page, 10)
	assert.NotZero(t, next)
	_, _, err = s.Scan("", uint64(numShards)<<32, 10, false)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
}
