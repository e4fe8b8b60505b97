package shm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/sessionkeys"
)

// An acquire whose value cannot fit fails with nothing changed: the lock
// it put first is taken away again, for a plain lock and a session's
// (bound) lock, and the segment checks clean.
func TestStepAcquireWhoseValueCannotFitKeepsNoLock(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 4 << 20, Policy: contract.NoEviction})
	for _, keys := range [][2]string{{"lk", "data"}, {sessionkeys.LockKey("sid1"), sessionkeys.DataKey("sid1")}} {
		st := backend.Step{Lock: keys[0], Token: []byte("tok"), LockTTL: time.Minute, Acquire: true, Fenced: true,
			Bound: true, Action: backend.ActionSet, Key: keys[1], Value: make([]byte, 8<<20)}
		assert.ErrorIs(t, backend.Run(s, &st), contract.ErrNoMemory)
		assert.False(t, st.Held)
		held, err := s.Exists(keys[0])
		require.NoError(t, err)
		assert.False(t, held, "%s: no lock left", keys[0])
	}
	require.NoError(t, s.Check())
}
