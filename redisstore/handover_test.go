package redisstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/sessionkeys"
)

// sessionRead is the session handler's read: its lock granted bound to
// the process, its fence minted and its data read, in one step.
func sessionRead(name string, token []byte) backend.Step {
	st := boundStep(sessionkeys.LockKey(name), token, time.Minute)
	st.Action, st.Key, st.Dst = backend.ActionGet, sessionkeys.DataKey(name), make([]byte, 64)
	return st
}

// lookedAndWaits waits until a waiter that started after the server had
// run pttls PTTLs has made its look (the turn script's PTTL of a lock held
// by another) and so stands subscribed: a release from then on reaches it
// in its wait, never in its look.
func lookedAndWaits(t *testing.T, addr string, pttls int64) {
	t.Helper()
	require.Eventually(t, func() bool { return calls(t, addr)["pttl"] > pttls },
		hangCatch, time.Millisecond, "the head looked and waits")
}

// A release hands a waiting session read its whole step: the woken head has
// the lock, a fence above the releasing holder's, and the data that
// holder wrote in its release, without a call of its own; its lease is
// renewed as a grant's is.
// On a standalone server the head reads the message on its subscriber
// connection; through Sentinel its process's hub reads it.
func TestAReleaseMakesTheHeadsStepForIt(t *testing.T) {
	srv := redistest.Start(t)
	t.Run("subscriber connection", func(t *testing.T) { releaseMakesTheHeadsStep(t, srv, "direct", false) })
	t.Run("hub", func(t *testing.T) { releaseMakesTheHeadsStep(t, srv, "hub", true) })
}

// waited is what a head's WaitStep answered.
type waited struct {
	done bool
	err  error
}

// holdAndLineUp has holder take the lock (take) and head line up behind
// it with st (as waiter "headid"), and returns head's WaitStep's answer
// once head stands subscribed in its wait; head uses its process's hub
// with hub.
func holdAndLineUp(t *testing.T, srv *redistest.Server, hub bool, take func(holder *Store), st *backend.Step) (holder, head *Store, woke <-chan waited) {
	holder, head = open(t, "redis://"+srv.Addr), open(t, "redis://"+srv.Addr)
	if hub {
		head.direct = nil
	}
	take(holder)
	require.True(t, head.handsOverStep(st))
	require.NoError(t, head.StepInLine(st, "headid", 30*time.Second))
	require.False(t, st.Held, "in line")
	w := make(chan waited, 1)
	pttls := calls(t, srv.Addr)["pttl"]
	go func() {
		done, err := head.WaitStep(st, "headid", hangCatch)
		w <- waited{done, err}
	}()
	lookedAndWaits(t, srv.Addr, pttls)
	return holder, head, w
}

// handedTheGrant checks that head, woken with w, has the lock that the
// release made its step for: held, its token in it, a fence above the
// holder's, for a lease that head renews, and out of line.
func handedTheGrant(t *testing.T, holder, head *Store, w waited, holderFence int64, st *backend.Step) {
	t.Helper()
	require.NoError(t, w.err)
	require.True(t, w.done, "the release made the head's step")
	assert.True(t, st.Held)
	assert.Equal(t, contract.Inserted, st.Outcome)
	assert.Greater(t, st.Fence, holderFence)
	v, _, err := get(t, holder, st.Lock)
	require.NoError(t, err)
	assert.Equal(t, string(st.Token), string(v))
	assert.LessOrEqual(t, leftOf(t, holder, st.Lock), head.BoundLease(), "the lock holds for the lease")
	head.renew.mu.Lock()
	_, renewed := head.renew.held[leaseKey{testKey(st.Lock), string(st.Token)}]
	head.renew.mu.Unlock()
	assert.True(t, renewed, "the head renews its lease")
	assert.Equal(t, 0, lineLength(t, holder, st.Lock), "the head left the line")
}

func releaseMakesTheHeadsStep(t *testing.T, srv *redistest.Server, name string, hub bool) {
	first, st := sessionRead(name, []byte("holder")), sessionRead(name, []byte("head"))
	holder, head, woke := holdAndLineUp(t, srv, hub, func(holder *Store) {
		require.NoError(t, holder.Step(&first))
		require.True(t, first.Held)
	}, &st)

	written, err := backend.SetFencedRelease(holder, st.Key, []byte("written"), time.Minute, st.Lock, first.Fence, []byte("holder"))
	require.NoError(t, err)
	require.True(t, written)
	handedTheGrant(t, holder, head, <-woke, first.Fence, &st)
	assert.True(t, st.Found)
	assert.Equal(t, "written", string(st.Dst[:st.N]), "the data of the release before")

	// A fence guard sees the head's grant: the old holder is refused, the
	// head's own release goes through.
	written, err = backend.SetFencedRelease(holder, st.Key, []byte("late"), time.Minute, st.Lock, first.Fence, []byte("holder"))
	require.NoError(t, err)
	assert.False(t, written)
	written, err = backend.SetFencedRelease(head, st.Key, []byte("mine"), time.Minute, st.Lock, st.Fence, []byte("head"))
	require.NoError(t, err)
	assert.True(t, written)
	head.renew.mu.Lock()
	assert.Empty(t, head.renew.held, "released: no renewal")
	head.renew.mu.Unlock()
}

// ephpm_kv_unlock's release (lock_release) of an exclusive lock makes the
// grant of a bound lock's head (ephpm_kv_lock(..., bound: true)) as the
// session's release does, whether the holder took its lock bound (a
// step) or not (lock_acquire).
func TestALockReleaseMakesTheHeadsGrant(t *testing.T) {
	srv := redistest.Start(t)
	for _, bound := range []bool{true, false} {
		for _, hub := range []bool{false, true} {
			name := fmt.Sprintf("lock-bound-%v-hub-%v", bound, hub)
			t.Run(name, func(t *testing.T) {
				st := boundStep(name, []byte("head"), time.Minute)
				var fence int64
				holder, head, woke := holdAndLineUp(t, srv, hub, func(holder *Store) {
					if bound {
						first := boundStep(name, []byte("holder"), time.Minute)
						require.NoError(t, holder.Step(&first))
						require.True(t, first.Held)
						fence = first.Fence
						return
					}
					out, f, err := holder.LockAttempt(name, []byte("holder"), contract.LockExclusive, time.Minute, 0)
					require.NoError(t, err)
					require.Equal(t, contract.Inserted, out)
					fence = f
				}, &st)
				released, err := holder.LockRelease(st.Lock, []byte("holder"))
				require.NoError(t, err)
				require.True(t, released)
				handedTheGrant(t, holder, head, <-woke, fence, &st)

				released, err = holder.LockRelease(st.Lock, []byte("holder"))
				require.NoError(t, err)
				assert.False(t, released, "the old holder holds nothing")
				released, err = head.LockRelease(st.Lock, []byte("head"))
				require.NoError(t, err)
				assert.True(t, released)
				head.renew.mu.Lock()
				assert.Empty(t, head.renew.held, "released: no renewal")
				head.renew.mu.Unlock()
			})
		}
	}
}

// A head whose wait ended just before the release that made its step (it
// missed the message) sees at its next look that the lock is its, and its
// next attempt claims it, reading the data and minting a fence above the
// one the release minted for it.
func TestAHeadThatMissedTheHandOverClaimsIt(t *testing.T) {
	srv := redistest.Start(t)
	holder, head := open(t, "redis://"+srv.Addr), open(t, "redis://"+srv.Addr)
	first := sessionRead("missed", []byte("holder"))
	require.NoError(t, holder.Step(&first))
	st := sessionRead("missed", []byte("head"))
	require.NoError(t, head.StepInLine(&st, "headid", 30*time.Second))
	require.False(t, st.Held)

	written, err := backend.SetFencedRelease(holder, st.Key, []byte("written"), time.Minute, st.Lock, first.Fence, []byte("holder"))
	require.NoError(t, err)
	require.True(t, written)
	fk := fenceKey(testKey(st.Lock))
	minted, err := holder.c.Get(ctx, fk).Int64()
	require.NoError(t, err)
	assert.Greater(t, minted, first.Fence, "the release minted the head's fence")

	turn, _, err := head.lineLook(testKey(st.Lock), "headid", turnScript)()
	require.NoError(t, err)
	assert.True(t, turn, "the look sees the lock is the head's")
	require.NoError(t, head.StepInLine(&st, "headid", 30*time.Second))
	assert.True(t, st.Held, "claimed")
	assert.Equal(t, "written", string(st.Dst[:st.N]))
	assert.Greater(t, st.Fence, minted)
}

// Only a step a release can make whole, off a Cluster, under a lease and
// without replica waits, is handed over with its answer; the rest are
// handed the lock, as before, and claim it.
func TestWhichStepsAReleaseMakes(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	read := sessionRead("which", []byte("t"))
	assert.True(t, s.handsOverStep(&read), "a session read")
	lock := boundStep("lock", []byte("t"), time.Minute)
	assert.True(t, s.handsOverStep(&lock), "a bound lock's grant")
	for name, change := range map[string]func(st *backend.Step){
		"not bound":     func(st *backend.Step) { st.Bound = false },
		"a write":       func(st *backend.Step) { st.Action, st.Value = backend.ActionSet, []byte("v") },
		"a removal":     func(st *backend.Step) { st.Action = backend.ActionDel },
		"a release too": func(st *backend.Step) { st.Release = true },
	} {
		st := sessionRead("which", []byte("t"))
		change(&st)
		assert.False(t, s.handsOverStep(&st), name)
	}
	for _, q := range []string{"lock_lease=0", "wait_replicas=1&wait_timeout=100ms"} {
		other := open(t, "redis://"+srv.Addr+"?"+q)
		assert.False(t, other.handsOverStep(&read), q)
	}
	s.mode = Cluster
	assert.False(t, s.handsOverStep(&read), "on a Cluster")
}

// A value over 1 MiB does not travel in the message (a server cuts off a
// subscriber whose output passes its pubsub limit): the head is handed the
// lock and woken, and its claim reads the value.
func TestALongValueIsReadByTheHeadsClaim(t *testing.T) {
	srv := redistest.Start(t)
	holder, head := open(t, "redis://"+srv.Addr), open(t, "redis://"+srv.Addr)
	first := sessionRead("long", []byte("holder"))
	require.NoError(t, holder.Step(&first))
	st := sessionRead("long", []byte("head"))
	st.Dst = make([]byte, 2<<20)
	require.NoError(t, head.StepInLine(&st, "headid", 30*time.Second))
	require.False(t, st.Held)
	woke := make(chan error, 1)
	var done bool
	pttls := calls(t, srv.Addr)["pttl"]
	go func() {
		var err error
		done, err = head.WaitStep(&st, "headid", hangCatch)
		woke <- err
	}()
	lookedAndWaits(t, srv.Addr, pttls)

	long := make([]byte, 1<<20+1)
	for i := range long {
		long[i] = byte('a' + i%26)
	}
	written, err := backend.SetFencedRelease(holder, st.Key, long, time.Minute, st.Lock, first.Fence, []byte("holder"))
	require.NoError(t, err)
	require.True(t, written)
	require.NoError(t, <-woke)
	assert.False(t, done, "woken to claim, not handed the step")
	require.NoError(t, head.StepInLine(&st, "headid", 30*time.Second))
	require.True(t, st.Held, "claimed")
	assert.Equal(t, long, st.Dst[:st.N])
	assert.Greater(t, st.Fence, first.Fence)
}
