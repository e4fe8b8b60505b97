package redisstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/lockwait"
	"github.com/ephpm/ephpm/sessionkeys"
)

func TestKeySlotIsTheClusters(t *testing.T) {
	// The Cluster specification's examples.
	assert.Equal(t, 0x31C3, keySlot("123456789"))
	assert.Equal(t, 12182, keySlot("foo"))
	assert.Equal(t, keySlot("user1000"), keySlot("{user1000}.following"))
	assert.Equal(t, keySlot("{user1000}.following"), keySlot("{user1000}.followers"))
	assert.NotEqual(t, keySlot("foo{}{bar}"), keySlot("bar"), "an empty tag: the whole key")
	assert.Equal(t, keySlot("foo{{bar}}zap"), keySlot("{bar"), "the tag is '{bar'")
}

func TestAFenceKeySharesItsLocksSlot(t *testing.T) {
	for _, name := range []string{"lock", "{orders}:lock", "a{b}c", "x{", "x{y", sessionkeys.LockKey("sid")} {
		rk := testKey(name)
		assert.Equal(t, keySlot(rk), keySlot(fenceKey(rk)), name)
	}
	for _, rk := range []string{"a}b", "{}x"} { // no hash tag, and a '}' that ends the one around it
		assert.NotEqual(t, keySlot(rk), keySlot(fenceKey(rk)), rk)
	}
}

func TestFenceKeysExpireAndFencesGoOnAfterAFlush(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr+"/0")
	_, f1, err := backend.SetNXFenced(s, "lock", []byte("a"), time.Minute)
	require.NoError(t, err)
	r, err := s.do(nil, "pttl", fenceKey("lock"))
	require.NoError(t, err)
	assert.InDelta(t, int64((time.Minute + fenceKeep).Milliseconds()), r.n, 5000, "the fence key outlives its lock by fenceKeep")
	_, _, err = backend.SetNXFenced(s, "forever", []byte("a"), 0)
	require.NoError(t, err)
	r, _ = s.do(nil, "pttl", fenceKey("forever"))
	assert.Equal(t, int64(-1), r.n, "a lock without TTL keeps its fence key")
	require.NoError(t, s.Flush())
	f, err := s.Fence("lock")
	require.NoError(t, err)
	assert.Zero(t, f, "FLUSHDB removed the fence key")
	out, f2, err := backend.SetNXFenced(s, "lock", []byte("b"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	assert.Greater(t, f2, f1, "the server's clock carries fences on")
	ok, err := backend.SetFenced(s, "data", []byte("x"), 0, "lock", f1)
	require.NoError(t, err)
	assert.False(t, ok, "a fence from before the flush is refused")
	ok, _ = backend.SetFenced(s, "data", []byte("x"), 0, "lock", f2)
	assert.True(t, ok)
}

func TestClusterRefusesFencesAcrossSlots(t *testing.T) {
	s := open(t, clusterURL(redistest.StartCluster(t)))
	_, f, err := backend.SetNXFenced(s, "{t}:lock", []byte("a"), time.Minute)
	require.NoError(t, err)
	_, err = backend.SetFenced(s, "elsewhere", []byte("x"), 0, "{t}:lock", f)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "hash tag")
	_, err = backend.DelFenced(s, "elsewhere", "{t}:lock", f)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	_, _, err = backend.SetNXFenced(s, "a}b", []byte("a"), time.Minute)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	found, _ := s.Exists("a}b")
	assert.False(t, found, "refused before anything changed")
	ok, err := backend.SetFenced(s, "{t}:data", []byte("x"), 0, "{t}:lock", f)
	require.NoError(t, err)
	assert.True(t, ok)
}

// Any step whose key is in another slot than its lock is refused with
// nothing sent, fenced or not, and so is an acquiring step in line, with
// every action, and a Locker's wait with one: the server's CROSSSLOT would
// read as an unknown outcome.
func TestClusterRefusesStepsAcrossSlots(t *testing.T) {
	s := open(t, clusterURL(redistest.StartCluster(t)))
	_, err := s.SetNX("{u}:lock", []byte("a"), time.Minute)
	require.NoError(t, err)
	_, err = backend.SetGuarded(s, "elsewhere", []byte("x"), 0, "{u}:lock", []byte("a"))
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	_, err = backend.SetGuardedRelease(s, "elsewhere", []byte("x"), 0, "{u}:lock", []byte("a"))
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	held, err := s.Exists("{u}:lock")
	require.NoError(t, err)
	assert.True(t, held, "refused before anything changed")
	// An acquiring step in line, with every action and fenced or not.
	for _, a := range []backend.Action{backend.ActionGet, backend.ActionSet, backend.ActionDel, backend.ActionExpire} {
		for _, fenced := range []bool{false, true} {
			st := backend.Step{Lock: "{v}:lock", Token: []byte("b"), LockTTL: time.Minute, Acquire: true, Fenced: fenced,
				Action: a, Key: "elsewhere", Value: []byte("x"), Dst: make([]byte, 8)}
			err = s.StepInLine(&st, "w1", time.Second)
			assert.ErrorIs(t, err, contract.ErrInvalidArgument, "action %d fenced %v", a, fenced)
			assert.Equal(t, contract.SetNXOutcome(0), st.Outcome, "nothing attempted")
			st.Outcome = 0
			assert.ErrorIs(t, backend.Run(s, &st), contract.ErrInvalidArgument, "as the Step outside the line")
			res, err := (&lockwait.Locker{Store: s}).AcquireStep(s, &st, time.Second)
			assert.ErrorIs(t, err, contract.ErrInvalidArgument, "a Locker's wait in line: action %d fenced %v", a, fenced)
			assert.Equal(t, lockwait.Result{Attempts: 1}, res, "refused at the first attempt, not waited on")
		}
	}
	assert.Zero(t, lineLength(t, s, "{v}:lock"), "nobody put in line")
	held, err = s.Exists("{v}:lock")
	require.NoError(t, err)
	assert.False(t, held, "nothing granted")
}

// A fenced acquire without an action reads no key, in line or not,
// whatever the Step's Key holds (a reused Step).
func TestFencedAcquireWithoutActionReadsNoKey(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr+"/0")
	require.NoError(t, s.Set("cache:other", []byte("unrelated"), 0))
	for _, inLine := range []bool{true, false} {
		st := backend.Step{Lock: "orders:lock", Token: []byte("tok"), LockTTL: time.Minute,
			Acquire: true, Fenced: true, Key: "cache:other"} // ActionNone
		var err error
		if inLine {
			var res lockwait.Result
			res, err = (&lockwait.Locker{Store: s}).AcquireStep(s, &st, 0)
			require.True(t, res.Acquired)
		} else {
			err = backend.Run(s, &st)
		}
		require.NoError(t, err)
		assert.Equal(t, contract.Inserted, st.Outcome)
		assert.False(t, st.Found, "in line %v: nothing read", inLine)
		assert.Zero(t, st.N, "in line %v: nothing read", inLine)
		_, err = s.Del("orders:lock")
		require.NoError(t, err)
	}
}
