package backend_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/kv"
)

func TestMemoryPassesTheContract(t *testing.T) {
	s := kv.New(kv.Options{})
	defer s.Close()
	backendtest.Run(t, backend.Memory{Store: s})
}

func TestMemoryConfiguresTheSessionBudget(t *testing.T) {
	s := kv.New(kv.Options{})
	defer s.Close()
	m := backend.Memory{Store: s}
	require.NoError(t, m.Configure("memory_limit", "1048576"))
	assert.Equal(t, int64(512<<10), s.Stats().SessionLimit, "0: half of memory_limit")
	require.NoError(t, m.Configure("session_memory_limit", "262144"))
	assert.Equal(t, int64(256<<10), s.Stats().SessionLimit)
	for _, bad := range []string{"-1", "x", "1048576"} {
		assert.ErrorIs(t, m.Configure("session_memory_limit", bad), kv.ErrInvalidArgument, bad)
	}
	assert.Equal(t, int64(256<<10), s.Stats().SessionLimit, "a refused setting changes nothing")
}
