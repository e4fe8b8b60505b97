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

// lineStore is a store with a Line whose attempts answer from a script,
// recording the Steps attempted in line and the waiters that left.
type lineStore struct {
	scripted
	steps []backend.Step
	left  []string
}

func (s *lineStore) Step(*backend.Step) error { panic("attempted outside the line") }
func (s *lineStore) InLine(string) bool       { return true }
func (s *lineStore) StepInLine(st *contract.Step, id string, lease time.Duration) error {
	if id == "" || lease != LineStep+LeaseMargin {
		panic("not a waiter with a lease")
	}
	st.Reset()
	var err error
	st.Outcome, err = s.SetNX(st.Lock, st.Token, st.LockTTL)
	st.Held = err == nil && st.Outcome == contract.Inserted
	c := *st
	c.Dst = nil
	s.steps = append(s.steps, c)
	return err
}
func (s *lineStore) WaitTurn(string, string, time.Duration) (bool, error) { return false, nil }
func (s *lineStore) LeaveLine(_, id string) error {
	s.left = append(s.left, id)
	return nil
}

// Where the store has a Line, every acquisition waits in it through its one
// attempt, StepInLine, whatever the step does: Acquire and its kin are
// each a Step, and AcquireStep's write, removal or expiry waits in line
// too. An error in line gives the place up.
func TestEveryAcquisitionWaitsInLine(t *testing.T) {
	clk := &fakeClock{}
	base := backend.Step{Lock: "l", Token: []byte("t"), LockTTL: time.Second, Acquire: true}
	for _, tc := range []struct {
		name string
		do   func(l *Locker, st *lineStore) (Result, error)
		want backend.Step
	}{
		{"Acquire", func(l *Locker, _ *lineStore) (Result, error) {
			return l.Acquire("l", []byte("t"), time.Second, time.Second)
		}, base},
		{"AcquireFenced", func(l *Locker, st *lineStore) (Result, error) {
			res, _, err := l.AcquireFenced(st, "l", []byte("t"), time.Second, time.Second)
			return res, err
		}, func() backend.Step { s := base; s.Fenced = true; return s }()},
		{"AcquireGet", func(l *Locker, _ *lineStore) (Result, error) {
			res, _, err := l.AcquireGet("l", []byte("t"), time.Second, time.Second, "d", nil)
			return res, err
		}, func() backend.Step { s := base; s.Bound, s.Action, s.Key = true, backend.ActionGet, "d"; return s }()},
		{"AcquireGetFenced", func(l *Locker, st *lineStore) (Result, error) {
			res, _, _, err := l.AcquireGetFenced(st, "l", []byte("t"), time.Second, time.Second, "d", nil)
			return res, err
		}, func() backend.Step {
			s := base
			s.Bound, s.Fenced, s.Action, s.Key = true, true, backend.ActionGet, "d"
			return s
		}()},
		{"AcquireStep set", func(l *Locker, st *lineStore) (Result, error) {
			s := base
			s.Action, s.Key, s.Value = backend.ActionSet, "d", []byte("v")
			return l.AcquireStep(st, &s, time.Second)
		}, func() backend.Step {
			s := base
			s.Action, s.Key, s.Value = backend.ActionSet, "d", []byte("v")
			return s
		}()},
		{"AcquireStep del", func(l *Locker, st *lineStore) (Result, error) {
			s := base
			s.Action, s.Key = backend.ActionDel, "d"
			return l.AcquireStep(st, &s, time.Second)
		}, func() backend.Step { s := base; s.Action, s.Key = backend.ActionDel, "d"; return s }()},
		{"AcquireStep expire", func(l *Locker, st *lineStore) (Result, error) {
			s := base
			s.Action, s.Key, s.TTL = backend.ActionExpire, "d", time.Minute
			return l.AcquireStep(st, &s, time.Second)
		}, func() backend.Step {
			s := base
			s.Action, s.Key, s.TTL = backend.ActionExpire, "d", time.Minute
			return s
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &lineStore{scripted: scripted{clock: clk, answers: []contract.SetNXOutcome{contract.Exists, contract.Inserted}}}
			res, err := tc.do(&Locker{Store: st, Clock: clk}, st)
			require.NoError(t, err)
			assert.Equal(t, Result{Acquired: true, Attempts: 2}, res)
			require.Len(t, st.steps, 2, "both attempts in line")
			for _, got := range st.steps {
				got.Outcome, got.Held = 0, false
				assert.Equal(t, tc.want, got)
			}
			assert.Empty(t, st.left)

			st = &lineStore{scripted: scripted{clock: clk, err: errors.New("down")}}
			_, err = tc.do(&Locker{Store: st, Clock: clk}, st)
			assert.Error(t, err)
			assert.Len(t, st.left, 1, "the place given up on an error")
		})
	}
}

// handingLine is a lineStore whose release makes the head's step for it
// (a StepLine): the second wait is woken by a release that granted the
// step, with a value read and a fence minted.
type handingLine struct {
	lineStore
	waits int
}

func (s *handingLine) WaitStep(st *contract.Step, id string, _ time.Duration) (bool, error) {
	if id == "" {
		panic("not a waiter")
	}
	s.waits++
	if s.waits < 2 {
		return false, nil
	}
	st.Reset()
	st.Held, st.Outcome, st.Fence = true, contract.Inserted, 7
	st.Found, st.N = true, copy(st.Dst, "handed")
	return true, nil
}

// A release that makes the head's step for it ends the acquisition with
// that step's outputs and no attempt of the head's own.
func TestAStepMadeByTheReleaseEndsTheWait(t *testing.T) {
	clk := &fakeClock{}
	st := &handingLine{lineStore: lineStore{scripted: scripted{clock: clk}}}
	dst := make([]byte, 16)
	res, read, fence, err := (&Locker{Store: st, Clock: clk}).AcquireGetFenced(st, "l", []byte("t"), time.Second, time.Minute, "d", dst)
	require.NoError(t, err)
	assert.Equal(t, Result{Acquired: true, Attempts: 2}, res, "two attempts in line, then the release's grant")
	assert.Equal(t, Read{N: 6, Found: true}, read)
	assert.Equal(t, "handed", string(dst[:read.N]))
	assert.Equal(t, int64(7), fence)
	assert.Equal(t, 2, st.waits)
	assert.Len(t, st.steps, 2)
	assert.Empty(t, st.left, "granted: no place to give up")
}
