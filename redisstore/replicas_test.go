package redisstore

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/redistest"
)

func TestWaitReplicasParameters(t *testing.T) {
	c, err := parse("redis://127.0.0.1:7000")
	require.NoError(t, err)
	assert.Zero(t, c.waitReplicas, "no waiting unless asked")
	c, err = parse("redis://127.0.0.1:7000?wait_replicas=2")
	require.NoError(t, err)
	assert.Equal(t, int64(2), c.waitReplicas)
	assert.Equal(t, DefaultWaitTimeout, c.waitTimeout)
	c, err = parse("redis+sentinel://127.0.0.1:26379?master_name=m&wait_replicas=1&wait_timeout=250ms")
	require.NoError(t, err)
	assert.Equal(t, int64(1), c.waitReplicas)
	assert.Equal(t, 250*time.Millisecond, c.waitTimeout)
	c, err = parse("redis://127.0.0.1:7000?wait_replicas=0")
	require.NoError(t, err)
	assert.Zero(t, c.waitReplicas)
	for _, bad := range []string{
		"redis://x?wait_replicas=-1", "redis://x?wait_replicas=one", "redis://x?wait_replicas=",
		"redis://x?wait_timeout=1s", // without wait_replicas
		"redis://x?wait_replicas=1&wait_timeout=0", "redis://x?wait_replicas=1&wait_timeout=2",
		"redis://x?wait_replicas=1&wait_timeout=5s",                       // not below the default read timeout
		"redis://x?wait_replicas=1&wait_timeout=500ms&read_timeout=500ms", // nor below the URL's
		"redis+cluster://x:1,y:2?wait_replicas=1",
	} {
		_, err := parse(bad)
		require.ErrorIs(t, err, ErrConfig, bad)
		assert.Contains(t, err.Error(), "wait_", bad)
	}
}

// masterAndReplica starts a master and a replica of it, and waits until
// the replica receives the master's writes (redistest.InSync: "online"
// comes before the stream does; a hang catch bounds the wait).
func masterAndReplica(t *testing.T) (master, replica *redistest.Server) {
	master = redistest.Start(t)
	replica = redistest.Start(t, redistest.ReplicaOf(master))
	require.Eventually(t, func() bool {
		return redistest.InSync(context.Background(), master, replica) == nil
	}, 2*time.Minute, 10*time.Millisecond, "the replica did not come to receive the master's writes")
	return master, replica
}

// With wait_replicas=1 every member keeps its contract (the conformance
// suite, each member as its script followed by WAIT), on the direct path
// (standalone) and through go-redis (Sentinel).
func TestWaitReplicasKeepsEveryContract(t *testing.T) {
	master, _ := masterAndReplica(t)
	s := open(t, "redis://"+master.Addr+"?wait_replicas=1&wait_timeout=4s") // a loaded host's replica may lag seconds
	require.NotNil(t, s.direct)
	backendtest.Run(t, s, backendtest.ServerMillis)
	st, err := s.Stats()
	require.NoError(t, err)
	assert.Contains(t, st.Facts, "each write waits for 1 replicas (wait_timeout 4s), 0 came back short")
}

// A write that the replicas cannot acknowledge in time (the replica is
// stopped, or there is none: a promoted replica has left its master)
// fails with an error, never an answer: the grant was made on the master
// and may not survive a failover. Without wait_replicas the same grant is
// answered as won, and the replica, promoted, grants the lock again: the
// double holder this parameter is for.
func TestAWriteTheReplicasDidNotAcknowledgeFails(t *testing.T) {
	master, replica := masterAndReplica(t)
	// Long enough for a running replica on a loaded host; a stopped one
	// never answers.
	url := "redis://" + master.Addr + "?wait_replicas=1&wait_timeout=2s"
	for _, direct := range []bool{true, false} {
		s := open(t, url)
		if !direct {
			// Through go-redis's client: the path of Sentinel URLs.
			s.direct.close()
			s.direct = nil
		}
		out, err := s.SetNX(fmt.Sprint("lock:before:", direct), []byte("a"), time.Minute)
		require.NoError(t, err, "direct %v", direct)
		require.Equal(t, contract.Inserted, out)
		require.NoError(t, replica.Signal(syscall.SIGSTOP))
		out, fence, err := backend.SetNXFenced(s, "lock:stopped", []byte("a"), time.Minute)
		require.NoError(t, replica.Signal(syscall.SIGCONT))
		require.ErrorIs(t, err, errReplicasShort, "direct %v: answered %v, fence %d", direct, out, fence)
		assert.NotErrorIs(t, err, contract.ErrInvalidArgument)
		st, err := s.Stats()
		require.NoError(t, err)
		assert.Contains(t, st.Facts, ", 1 came back short", "direct %v", direct)
		// Acknowledged again once the replica runs.
		require.Eventually(t, func() bool {
			_, err := s.DelIfEq("lock:stopped", []byte("a"))
			return err == nil
		}, time.Minute, 10*time.Millisecond)
	}

	// The replica is promoted by hand: the master's later writes are what
	// a failover loses.
	r := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer r.Close()
	require.NoError(t, r.Do(context.Background(), "replicaof", "no", "one").Err())
	waiting := open(t, "redis://"+master.Addr+"?wait_replicas=1&wait_timeout=200ms")
	_, err := waiting.SetNX("lock:split", []byte("holder"), time.Minute)
	require.ErrorIs(t, err, errReplicasShort, "no replica acknowledged the grant")
	plain := open(t, "redis://"+master.Addr)
	out, err := plain.SetNX("lock:split2", []byte("holder"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out, "without waiting, the grant is answered as won")
	promoted := open(t, "redis://"+replica.Addr)
	out, err = promoted.SetNX("lock:split2", []byte("second"), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, contract.Inserted, out, "and the promoted replica grants it again: two holders")
}
