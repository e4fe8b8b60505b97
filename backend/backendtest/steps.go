package backendtest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/sessionkeys"
)

// The contract of Backend.Step beyond the members that are one Step each
// (SetNXGet, SetGuardedRelease, ... above): combinations no member has,
// which every backend must apply in one step all the same.
func init() { cases = append(cases, stepContract...) }

// step runs s on b and fails t on an error.
func step(t *testing.T, b backend.Backend, s *backend.Step) {
	t.Helper()
	require.NoError(t, backend.Run(b, s))
}

var stepContract = []struct {
	name string
	run  func(t *testing.T, b backend.Backend, p string, clock Clock)
}{
	{"StepAcquiresAndWritesInOneStep", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		s := backend.Step{Lock: lock, Token: []byte("tok"), LockTTL: time.Minute, Acquire: true,
			Action: backend.ActionSet, Key: data, Value: []byte("v1"), TTL: 30 * time.Second}
		step(t, b, &s)
		assert.Equal(t, contract.Inserted, s.Outcome)
		assert.True(t, s.Held)
		assert.True(t, s.Done, "written")
		assert.False(t, s.Released)
		assert.Zero(t, s.Fence, "not fenced")
		dst := make([]byte, 8)
		n, found, _ := b.GetInto(data, dst)
		require.True(t, found)
		assert.Equal(t, "v1", string(dst[:n]))
		ttl, _, _ := b.PTTL(data)
		assert.Greater(t, ttl, 20*time.Second, "the value's TTL")
		assert.LessOrEqual(t, ttl, 30*time.Second)
		ttl, _, _ = b.PTTL(lock)
		assert.Greater(t, ttl, 50*time.Second, "the lock's TTL")
		n, _, _ = b.GetInto(lock, dst)
		assert.Equal(t, "tok", string(dst[:n]), "the lock holds the token")

		// Held: nothing is written, and the outputs say so.
		s.Token, s.Value = []byte("other"), []byte("v2")
		step(t, b, &s)
		assert.Equal(t, contract.Exists, s.Outcome)
		assert.False(t, s.Held)
		assert.False(t, s.Done, "the outputs are the call's, not the last call's")
		n, _, _ = b.GetInto(data, dst)
		assert.Equal(t, "v1", string(dst[:n]), "nothing written without the lock")

		// Fenced: the grant's fence guards a write, as SetNXFenced's does.
		ok, _ := b.DelIfEq(lock, []byte("tok"))
		require.True(t, ok)
		s = backend.Step{Lock: lock, Token: []byte("tok2"), LockTTL: time.Minute, Acquire: true, Fenced: true,
			Action: backend.ActionSet, Key: data, Value: []byte("v3")}
		step(t, b, &s)
		require.Equal(t, contract.Inserted, s.Outcome)
		assert.Positive(t, s.Fence)
		latest, err := b.Fence(lock)
		require.NoError(t, err)
		assert.Equal(t, s.Fence, latest)
		ttl, _, _ = b.PTTL(data)
		assert.Equal(t, time.Duration(-1), ttl, "TTL 0: none")
		ok, err = backend.SetFenced(b, data, []byte("v4"), 0, lock, s.Fence)
		require.NoError(t, err)
		assert.True(t, ok)
	}},
	{"StepAcquiresAndRemovesOrRetimes", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		require.NoError(t, b.Set(data, []byte("v"), time.Minute))
		s := backend.Step{Lock: lock, Token: []byte("tok"), LockTTL: time.Minute, Acquire: true,
			Action: backend.ActionExpire, Key: data, TTL: 0}
		step(t, b, &s)
		assert.Equal(t, contract.Inserted, s.Outcome)
		assert.True(t, s.Done, "the value was live")
		ttl, _, _ := b.PTTL(data)
		assert.Equal(t, time.Duration(-1), ttl, "no TTL now")
		b.DelIfEq(lock, []byte("tok"))

		s = backend.Step{Lock: lock, Token: []byte("tok"), LockTTL: time.Minute, Acquire: true,
			Action: backend.ActionDel, Key: data}
		step(t, b, &s)
		assert.Equal(t, contract.Inserted, s.Outcome)
		assert.True(t, s.Done, "a live value removed")
		found, _ := b.Exists(data)
		assert.False(t, found)
		found, _ = b.Exists(lock)
		assert.True(t, found, "the lock stays taken")
		b.DelIfEq(lock, []byte("tok"))

		step(t, b, &s)
		assert.True(t, s.Held)
		assert.False(t, s.Done, "nothing to remove")
		s.Action = backend.ActionExpire
		b.DelIfEq(lock, []byte("tok"))
		step(t, b, &s)
		assert.True(t, s.Held)
		assert.False(t, s.Done, "nothing to retime")
	}},
	{"StepReadsUnderAGuardAndReleases", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		require.NoError(t, b.Set(data, []byte("value"), time.Minute))
		_, err := b.SetNX(lock, []byte("tok"), time.Minute)
		require.NoError(t, err)
		dst := make([]byte, 8)
		s := backend.Step{Lock: lock, Token: []byte("bad"), Guard: backend.GuardToken,
			Action: backend.ActionGet, Key: data, Dst: dst}
		step(t, b, &s)
		assert.False(t, s.Held, "another token")
		assert.False(t, s.Found, "nothing read without the guard")
		assert.Zero(t, s.N)

		s.Token = []byte("tok")
		step(t, b, &s)
		assert.True(t, s.Held)
		assert.True(t, s.Done)
		assert.True(t, s.Found)
		assert.Equal(t, "value", string(dst[:s.N]))
		assert.False(t, s.Released, "no release asked")

		small := []byte("xy")
		s.Dst = small
		step(t, b, &s)
		assert.True(t, s.Found)
		assert.Equal(t, 5, s.N, "too small: the length comes back")
		assert.Equal(t, "xy", string(small), "and nothing is copied")

		s.Dst, s.Release = dst, true
		step(t, b, &s)
		assert.True(t, s.Held)
		assert.Equal(t, "value", string(dst[:s.N]))
		assert.True(t, s.Released, "read, then released")
		found, _ := b.Exists(lock)
		assert.False(t, found)

		b.Del(data)
		_, err = b.SetNX(lock, []byte("tok"), time.Minute)
		require.NoError(t, err)
		step(t, b, &s)
		assert.True(t, s.Held)
		assert.False(t, s.Found, "no value")
		assert.True(t, s.Released, "released whether or not the value was there")
	}},
	{"StepReleasesOnlyItsOwnTokenWithoutAGuard", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		_, err := b.SetNX(lock, []byte("theirs"), time.Minute)
		require.NoError(t, err)
		s := backend.Step{Lock: lock, Token: []byte("mine"), Release: true,
			Action: backend.ActionSet, Key: data, Value: []byte("v")}
		step(t, b, &s)
		assert.True(t, s.Held, "no guard: the step acts")
		assert.True(t, s.Done)
		assert.False(t, s.Released, "the lock is another's")
		found, _ := b.Exists(lock)
		assert.True(t, found)

		s.Token = []byte("theirs")
		step(t, b, &s)
		assert.True(t, s.Released)
		found, _ = b.Exists(lock)
		assert.False(t, found)
	}},
	{"StepUnderAFenceAndItsHolder", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		require.NoError(t, b.Set(data, []byte("value"), time.Minute))
		_, fa, err := backend.SetNXFenced(b, lock, []byte("a"), time.Minute)
		require.NoError(t, err)
		dst := make([]byte, 8)
		s := backend.Step{Lock: lock, Token: []byte("a"), Guard: backend.GuardFence, Fence: fa,
			Action: backend.ActionGet, Key: data, Dst: dst}
		step(t, b, &s)
		assert.True(t, s.Held)
		assert.Equal(t, "value", string(dst[:s.N]))

		s.Fence = fa + 1
		step(t, b, &s)
		assert.False(t, s.Held, "not the latest grant")
		assert.False(t, s.Found)
		assert.Equal(t, fa+1, s.Fence, "a guard's fence is an input: kept")

		// The fence holds, but the lock is another's: only GuardFence acts.
		b.Del(lock)
		_, err = b.SetNX(lock, []byte("unfenced"), time.Minute)
		require.NoError(t, err)
		s = backend.Step{Lock: lock, Token: []byte("a"), Guard: backend.GuardFenceHolder, Fence: fa,
			Action: backend.ActionExpire, Key: data, TTL: 2 * time.Minute, Release: true}
		step(t, b, &s)
		assert.False(t, s.Held, "held by another")
		s.Guard = backend.GuardFence
		step(t, b, &s)
		assert.True(t, s.Held, "the fence alone holds")
		assert.True(t, s.Done)
		assert.False(t, s.Released, "the lock is not a's")
		ttl, _, _ := b.PTTL(data)
		assert.Greater(t, ttl, 90*time.Second, "retimed")
	}},
	{"StepWithoutALockIsAPlainCall", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		key := p + "k"
		s := backend.Step{Action: backend.ActionSet, Key: key, Value: []byte("v"), TTL: time.Minute}
		step(t, b, &s)
		assert.True(t, s.Held)
		assert.True(t, s.Done)
		assert.Zero(t, s.Outcome, "no acquire")
		dst := make([]byte, 4)
		s = backend.Step{Action: backend.ActionGet, Key: key, Dst: dst}
		step(t, b, &s)
		assert.True(t, s.Found)
		assert.Equal(t, "v", string(dst[:s.N]))
		s = backend.Step{Action: backend.ActionExpire, Key: key}
		step(t, b, &s)
		assert.True(t, s.Done)
		ttl, _, _ := b.PTTL(key)
		assert.Equal(t, time.Duration(-1), ttl)
		s = backend.Step{Action: backend.ActionDel, Key: key}
		step(t, b, &s)
		assert.True(t, s.Done)
		step(t, b, &s)
		assert.False(t, s.Done, "nothing left to remove")
		s = backend.Step{}
		step(t, b, &s)
		assert.True(t, s.Held, "a step of nothing holds, and does nothing")
	}},
	{"StepRefusesWhatMeansNothing", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		for _, s := range []backend.Step{
			{Lock: lock, Token: []byte("t"), Acquire: true, Guard: backend.GuardToken, Action: backend.ActionSet, Key: data},
			{Lock: lock, Token: []byte("t"), Acquire: true, Release: true},
			{Lock: lock, Token: []byte("t"), Acquire: true, Action: backend.ActionSet, Key: lock},
			{Lock: lock, Token: []byte("t"), Fenced: true, Action: backend.ActionSet, Key: data},
			{Lock: lock, Token: []byte("t"), Bound: true, Guard: backend.GuardToken, Action: backend.ActionSet, Key: data},
			{Lock: lock, Guard: backend.GuardFence, Action: backend.ActionSet, Key: data},
			{Lock: lock, Guard: backend.GuardFenceHolder, Fence: -1, Action: backend.ActionDel, Key: data},
			{Lock: lock, Guard: backend.Guard(9), Action: backend.ActionDel, Key: data},
			{Lock: lock, Guard: backend.GuardToken, Action: backend.Action(9), Key: data},
			{Lock: lock, Guard: backend.GuardToken, Action: backend.ActionSet},
			{Guard: backend.GuardToken, Action: backend.ActionSet, Key: data},
			{Lock: lock, Acquire: true, LockTTL: -time.Second},
		} {
			err := backend.Run(b, &s)
			require.ErrorIs(t, err, contract.ErrInvalidArgument, "%+v", s)
		}
		found, _ := b.Exists(data)
		assert.False(t, found, "nothing written")
		found, _ = b.Exists(lock)
		assert.False(t, found, "nothing taken")
	}},
	{"StepAcquireAndWriteRaceHasOneWinner", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		for round := 0; round < 10; round++ {
			sid := fmt.Sprintf("%ssid%d", p, round)
			data, lock := sessionkeys.DataKey(sid), sessionkeys.LockKey(sid)
			const racers = 8
			won := make([]bool, racers)
			var wg sync.WaitGroup
			for i := 0; i < racers; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					s := backend.Step{Lock: lock, Token: []byte(fmt.Sprint(i)), LockTTL: time.Minute, Acquire: true,
						Fenced: i%2 == 1, Action: backend.ActionSet, Key: data, Value: []byte(fmt.Sprint(i))}
					if assert.NoError(t, backend.Run(b, &s)) {
						won[i] = s.Outcome == contract.Inserted
						assert.Equal(t, s.Held, s.Done, "written exactly when taken")
					}
				}(i)
			}
			wg.Wait()
			winner := -1
			for i, w := range won {
				if w {
					require.Equal(t, -1, winner, "one winner")
					winner = i
				}
			}
			require.NotEqual(t, -1, winner, "one winner")
			dst := make([]byte, 4)
			n, _, _ := b.GetInto(data, dst)
			assert.Equal(t, fmt.Sprint(winner), string(dst[:n]), "the value is the winner's")
			n, _, _ = b.GetInto(lock, dst)
			assert.Equal(t, fmt.Sprint(winner), string(dst[:n]), "and so is the lock")
		}
	}},
}
