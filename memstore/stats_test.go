package memstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStats(t *testing.T) {
	s, clk := newTestStore(t)
	require.NoError(t, s.Set("a", []byte("1"), time.Second))
	s.Get("a")
	s.Get("a")
	s.Get("missing")
	s.SetNX("l", []byte("t"), 0)
	s.SetNX("l", []byte("u"), 0)
	s.DelIfEq("l", []byte("u"))
	s.DelIfEq("l", []byte("t"))
	clk.advance(time.Second)
	s.Get("a")
	st := s.Stats()
	assert.Equal(t, uint64(2), st.Hits)
	assert.Equal(t, uint64(2), st.Misses)
	assert.Equal(t, uint64(1), st.Sets)
	assert.Equal(t, uint64(1), st.SetNXWins)
	assert.Equal(t, uint64(1), st.SetNXLosses)
	assert.Equal(t, uint64(1), st.DelIfEqMatches)
	assert.Equal(t, uint64(1), st.DelIfEqMismatches)
	assert.Equal(t, uint64(1), st.Expirations)
	assert.Equal(t, int64(0), st.Keys)
	assert.Regexp(t, `^[0-9a-f-]{36}$`, st.InstanceID)
	other := New(Options{SweepInterval: -1})
	defer other.Close()
	assert.NotEqual(t, st.InstanceID, other.Stats().InstanceID)
}
