package memstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

func TestExpiryHeapStaysBounded(t *testing.T) {
	s, _ := newTestStore(t)
	for i := 0; i < 100_000; i++ {
		require.NoError(t, s.Set("hot", []byte("v"), time.Hour))
	}
	sh := s.shardFor("hot")
	assert.LessOrEqual(t, len(sh.expiries), 2*sh.volatile+len(sh.t.hashes)/4+64+1)
	assert.Equal(t, 1, sh.volatile)
}

// A lock taken and released, or refreshed, takes its heap item back: the
// heap does not grow, so no compaction has to scan the shard's table.
func TestLockPairLeavesNoExpiryItem(t *testing.T) {
	s, clk := newTestStore(t)
	tok := []byte("token")
	sh := s.shardFor("lock")
	for i := 0; i < 1000; i++ {
		out, err := s.SetNX("lock", tok, time.Second)
		require.NoError(t, err)
		require.Equal(t, contract.Inserted, out)
		ok, err := s.ExpireIfEq("lock", tok, time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		require.Len(t, sh.expiries, 1)
		require.True(t, s.DelIfEq("lock", tok))
		require.Empty(t, sh.expiries, "round %d", i)
		clk.advance(time.Millisecond)
	}
}
