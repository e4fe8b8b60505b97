package lockwait

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
)

// AcquireStep retries the whole step on Acquire's schedule, and the step
// holds the winning attempt's outputs: its read and its fence.
func TestAcquireStepBacksOffAndKeepsTheWinningAttemptsOutputs(t *testing.T) {
	clk := &fakeClock{}
	st := &scriptedFencedReader{scriptedReader: scriptedReader{
		scripted: scripted{clock: clk, answers: []contract.SetNXOutcome{contract.Exists, contract.Exists, contract.Inserted}}, data: "v1"}, fence: 41}
	s := backend.Step{Lock: "l", Token: []byte("t"), LockTTL: time.Second, Acquire: true, Fenced: true,
		Action: backend.ActionGet, Key: "d", Dst: make([]byte, 8)}
	res, err := (&Locker{Store: st, Clock: clk}).AcquireStep(st, &s, time.Second)
	require.NoError(t, err)
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{10 * ms, 20 * ms}, clk.sleeps, "the same schedule as Acquire")
	assert.Equal(t, Result{Acquired: true, Attempts: 3}, res)
	assert.True(t, s.Held)
	assert.Equal(t, contract.Inserted, s.Outcome)
	assert.Equal(t, "v1", string(s.Dst[:s.N]))
	assert.Equal(t, int64(42), s.Fence, "the winning attempt's fence")

	// Held for the whole budget: the last attempt's outputs, nothing held.
	st = &scriptedFencedReader{scriptedReader: scriptedReader{scripted: scripted{clock: clk}, data: "v1"}}
	res, err = (&Locker{Store: st, Clock: clk}).AcquireStep(st, &s, 50*ms)
	require.NoError(t, err)
	assert.False(t, res.Acquired)
	assert.False(t, s.Held)
	assert.Equal(t, contract.Exists, s.Outcome)
	assert.Zero(t, s.N, "nothing read without the lock")
	assert.Zero(t, s.Fence, "nor fenced")

	st = &scriptedFencedReader{scriptedReader: scriptedReader{scripted: scripted{clock: clk, err: errors.New("down")}}}
	_, err = (&Locker{Store: st, Clock: clk}).AcquireStep(st, &s, time.Second)
	assert.Error(t, err, "a store error is not contention")
}
