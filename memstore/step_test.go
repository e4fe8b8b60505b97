package memstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ephpm/ephpm/contract"
)

// An acquire whose value cannot fit fails with nothing changed: no lock
// is left behind.
func TestStepAcquireWhoseValueCannotFitKeepsNoLock(t *testing.T) {
	s := New(Options{Memory: contract.MemoryConfig{Limit: 4 << 20, Policy: contract.NoEviction}})
	st := contract.Step{Lock: "lk", Token: []byte("tok"), LockTTL: time.Minute, Acquire: true, Fenced: true,
		Action: contract.ActionSet, Key: "data", Value: make([]byte, 8<<20)}
	assert.ErrorIs(t, s.Step(&st), contract.ErrNoMemory)
	assert.False(t, st.Held)
	assert.False(t, s.Exists("lk"), "no lock left")
	assert.False(t, s.Exists("data"))
}
