package memstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// An acquire whose value cannot fit fails with nothing changed: no lock
// is left behind.
func TestStepAcquireWhoseValueCannotFitKeepsNoLock(t *testing.T) {
	s := New(Options{Memory: MemoryConfig{Limit: 4 << 20, Policy: NoEviction}})
	st := Step{Lock: "lk", Token: []byte("tok"), LockTTL: time.Minute, Acquire: true, Fenced: true,
		Action: ActionSet, Key: "data", Value: make([]byte, 8<<20)}
	assert.ErrorIs(t, s.Step(&st), ErrNoMemory)
	assert.False(t, st.Held)
	assert.False(t, s.Exists("lk"), "no lock left")
	assert.False(t, s.Exists("data"))
}
