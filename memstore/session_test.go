package memstore

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

const (
	dataPrefix = "session:"
	lockPrefix = "session_lock:"
)

func newSessionStore(t *testing.T, cfg contract.MemoryConfig) *Store {
	t.Helper()
	clk := &fakeClock{}
	clk.ns.Store(1_000_000_000)
	s := New(Options{Now: clk.now, SweepInterval: -1, SessionDataPrefix: dataPrefix, SessionLockPrefix: lockPrefix})
	t.Cleanup(s.Close)
	require.NoError(t, s.Configure(cfg))
	return s
}

var csrf = []byte(`csrf|s:64:"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";`)

func TestSessionLimitSetting(t *testing.T) {
	s := newSessionStore(t, contract.MemoryConfig{})
	assert.Zero(t, s.Stats().SessionLimit, "no store limit: no budget")
	require.NoError(t, s.Configure(contract.MemoryConfig{SessionLimit: 1 << 20}))
	assert.Equal(t, int64(1<<20), s.Stats().SessionLimit)
	require.NoError(t, s.Configure(contract.MemoryConfig{Limit: 1 << 20}))
	assert.Equal(t, int64(512<<10), s.Stats().SessionLimit)
	assert.Zero(t, s.MemoryConfig().SessionLimit)
	require.NoError(t, s.Configure(contract.MemoryConfig{Limit: 1 << 20, SessionLimit: 1<<20 - 1}))
	err := s.Configure(contract.MemoryConfig{Limit: 1 << 20, SessionLimit: 1 << 20})
	require.ErrorIs(t, err, contract.ErrInvalidArgument)
	assert.True(t, strings.Contains(err.Error(), "session_memory_limit"), err.Error())
	assert.ErrorIs(t, s.Configure(contract.MemoryConfig{SessionLimit: -1}), contract.ErrInvalidArgument)
	assert.Equal(t, int64(1<<20-1), s.Stats().SessionLimit, "a refused setting changes nothing")
}

// A session's data and lock hash by the sid: one shard holds both.
func TestASessionsDataAndLockShareAShard(t *testing.T) {
	s := newSessionStore(t, contract.MemoryConfig{})
	for i := 0; i < 100; i++ {
		sid := fmt.Sprint(i)
		d, dh, dk := s.locate(dataPrefix + sid)
		l, lh, lk := s.locate(lockPrefix + sid)
		require.Same(t, d, l)
		require.Equal(t, dh, lh)
		require.Equal(t, contract.KindSession, dk)
		require.Equal(t, contract.KindSessionLock, lk)
	}
	_, _, k := s.locate("sessionX")
	assert.Equal(t, contract.KindPlain, k)
}
