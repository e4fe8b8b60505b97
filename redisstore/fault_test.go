package redisstore

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
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

// A release whose reply is lost must be reported as an error (outcome
// unknown), never as "released" or "not held"; and it must not be retried.
func TestLostReplyIsAnErrorNotAnAnswer(t *testing.T) {
	checkEvictionEvery(t, time.Hour)
	srv := redistest.Start(t)
	proxy := redistest.NewProxy(t, srv.Addr)
	s, err := Open("redis://"+proxy.Addr+"?read_timeout=500ms", testOptions)
	require.NoError(t, err)
	defer s.Close()

	out, err := s.SetNX("lock", []byte("tok"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	// Load the script on the server and keep a live connection, so the
	// reply dropped next is the release's own.
	_, err = s.DelIfEq("absent", []byte("x"))
	require.NoError(t, err)

	proxy.DropNextReply()
	ok, err := s.DelIfEq("lock", []byte("tok"))
	require.Error(t, err, "a lost reply is an unknown outcome")
	assert.False(t, ok)

	// The release did reach the server and ran exactly once: the lock is
	// gone, and a retry would have answered "not held".
	direct, err := Open("redis://"+srv.Addr, testOptions)
	require.NoError(t, err)
	defer direct.Close()
	held, err := direct.Exists("lock")
	require.NoError(t, err)
	assert.False(t, held)

	// A lost reply to SET NX: the caller may hold the lock; it is told the
	// outcome is unknown, and its release with its token works.
	// A live connection again, and the server's eviction policy learned
	// anew after that reconnect: the drop hits the SET NX.
	_, err = s.Exists("lock2")
	require.NoError(t, err)
	_, err = s.DelIfEq("absent", []byte("x"))
	require.NoError(t, err)
	proxy.DropNextReply()
	_, err = s.SetNX("lock2", []byte("mine"), time.Minute)
	require.Error(t, err)
	ok, err = s.DelIfEq("lock2", []byte("mine"))
	require.NoError(t, err)
	assert.True(t, ok, "the grant had landed; the token releases it")
}

// Guarded session writes go on while the server is stopped and restarted:
// calls fail fast while it is away, the client recovers by itself, and no
// write that was acknowledged is lost (the server persists with fsync).
// The phases follow the writers' progress, not the clock: the server stops
// once every writer has had a write acknowledged, restarts once every
// writer has seen a call fail, and the run ends once every writer has had
// a write acknowledged after the restart (after its lock left over from
// the outage, if any, has lapsed).
func TestRestartUnderLoadLosesNoAcknowledgedWrite(t *testing.T) {
	srv := redistest.Start(t, "appendonly yes", "appendfsync always")
	s, err := Open("redis://"+srv.Addr+"?dial_timeout=200ms&read_timeout=300ms&write_timeout=300ms", testOptions)
	require.NoError(t, err)
	defer s.Close()

	const writers = 4
	const lockTTL = 5 * time.Second
	var acked, failed [writers]atomic.Int64
	var slow atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			sid := fmt.Sprintf("w%d", w)
			l := &lockwait.Locker{Store: s}
			for n := int64(1); ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				tok, _ := sessionkeys.NewToken()
				res, err := l.Acquire(sessionkeys.LockKey(sid), []byte(tok), lockTTL, 0)
				if err == nil && res.Acquired {
					var ok bool
					ok, err = backend.SetGuarded(s, sessionkeys.DataKey(sid), []byte(strconv.FormatInt(n, 10)), time.Hour,
						sessionkeys.LockKey(sid), []byte(tok))
					if err == nil && ok {
						acked[w].Store(n)
					}
					s.DelIfEq(sessionkeys.LockKey(sid), []byte(tok))
				}
				if err != nil {
					failed[w].Add(1)
				}
				if time.Since(start) > 30*time.Second { // a hang catch, not a speed bound
					slow.Add(1)
				}
				if !res.Acquired {
					time.Sleep(time.Millisecond) // a lock left over from the outage: do not spin
				}
			}
		}(w)
	}
	// every waits until cond holds for every writer; the bound catches a
	// hang and is no speed target.
	every := func(what string, cond func(w int) bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			all := true
			for w := 0; w < writers; w++ {
				all = all && cond(w)
			}
			if all {
				return
			}
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("no progress: not every writer %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	every("had a write acknowledged", func(w int) bool { return acked[w].Load() > 0 })
	srv.Stop()
	var failedBefore [writers]int64
	for w := range failedBefore {
		failedBefore[w] = failed[w].Load()
	}
	every("saw a call fail while the server was away", func(w int) bool { return failed[w].Load() > failedBefore[w] })
	var ackedBefore [writers]int64
	for w := range ackedBefore {
		ackedBefore[w] = acked[w].Load()
	}
	srv.Restart(t)
	every("had a write acknowledged after the restart", func(w int) bool { return acked[w].Load() > ackedBefore[w] })
	close(stop)
	wg.Wait()

	assert.Zero(t, slow.Load(), "no call hung past the timeouts")
	for w := 0; w < writers; w++ {
		dst := make([]byte, 32)
		n, found, err := s.GetInto(sessionkeys.DataKey(fmt.Sprintf("w%d", w)), dst)
		require.NoError(t, err, "working again after the restart")
		require.True(t, found, "writer %d had writes acknowledged", w)
		stored, _ := strconv.ParseInt(string(dst[:n]), 10, 64)
		assert.GreaterOrEqual(t, stored, acked[w].Load(), "writer %d: an acknowledged write was lost", w)
	}
}
