package redisstore

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/redistest"
)

// Issue 29, item 3: a fence issued later is larger than every fence issued
// earlier for its name, or the call fails, also when the server forgot the
// fence key: a restart with no persistence, a failover that lost the
// latest grants. The fence key goes with the data; what carries fences on
// is the floor at the server's clock (mintFenceLua). Both servers here run
// on this host's clock, so these tests show the mechanism, not the
// assumption across hosts (fence.go).

// grantFenced grants lock name with token on s, which must insert it, and
// returns the grant's fence.
func grantFenced(t *testing.T, s *Store, name, token string) int64 {
	t.Helper()
	out, f, err := backend.SetNXFenced(s, name, []byte(token), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out, "%s is free", name)
	require.Positive(t, f)
	return f
}

// grantAndRelease grants name n times on s, releasing each grant, and
// returns the largest fence, checking on the way that each is above the
// one before and above floor.
func grantAndRelease(t *testing.T, s *Store, name string, n int, floor int64) int64 {
	t.Helper()
	last := floor
	for i := 0; i < n; i++ {
		tok := "t" + strconv.Itoa(i)
		f := grantFenced(t, s, name, tok)
		require.Greater(t, f, last, "grant %d of %s", i, name)
		last = f
		released, err := s.DelIfEq(name, []byte(tok))
		require.NoError(t, err)
		require.True(t, released)
	}
	return last
}

// infoField is field name of INFO section on s ("" if absent).
func infoField(t *testing.T, s *Store, section, name string) string {
	t.Helper()
	r, err := s.do(nil, "info", section)
	require.NoError(t, err)
	for _, line := range strings.Split(string(r.b), "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

func TestFencesGoOnUpAcrossARestartWithoutPersistence(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr+"/0")
	// No persistence, so the restart forgets every key.
	save, err := s.c.ConfigGet(ctx, "save").Result()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"save": ""}, save)
	aof, err := s.c.ConfigGet(ctx, "appendonly").Result()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"appendonly": "no"}, aof)

	const name = "orders:lock"
	f1 := grantAndRelease(t, s, name, 5, 0)
	// G: the last grant, still held when the server goes.
	fg := grantFenced(t, s, name, "g")
	require.Greater(t, fg, f1)
	ok, err := backend.SetFenced(s, "orders:data", []byte("g1"), 0, name, fg)
	require.NoError(t, err)
	require.True(t, ok, "G's fence is the latest: its write lands")

	srv.Restart(t)

	// The store reconnects by itself: the first call may still meet the
	// dead connection. The bound only catches a hang.
	var f int64
	deadline := time.Now().Add(hangCatch)
	for f, err = s.Fence(name); err != nil; f, err = s.Fence(name) {
		t.Logf("after the restart: %v", err)
		require.True(t, time.Now().Before(deadline), "no answer after the restart within %v: %v", hangCatch, err)
		time.Sleep(10 * time.Millisecond)
	}
	require.Zero(t, f, "the restart forgot the fence key")
	found, err := s.Exists(name)
	require.NoError(t, err)
	require.False(t, found, "and G's lock")

	// G's fenced write: the fence key is gone, so no fence matches.
	ok, err = backend.SetFenced(s, "orders:data", []byte("g2"), 0, name, fg)
	require.NoError(t, err, "a stale fence is an answer, not an error")
	assert.False(t, ok, "G's fence is refused once the server forgot it")

	f2 := grantFenced(t, s, name, "new")
	assert.Greater(t, f2, f1, "a grant after the restart is above every grant before it")
	assert.Greater(t, f2, fg, "and above the fence still held")

	ok, err = backend.SetFenced(s, "orders:data", []byte("g3"), 0, name, fg)
	require.NoError(t, err)
	assert.False(t, ok, "G's fence is refused after the new grant")
	found, err = s.Exists("orders:data")
	require.NoError(t, err)
	assert.False(t, found, "no refused write landed")
	ok, err = backend.SetFenced(s, "orders:data", []byte("new"), 0, name, f2)
	require.NoError(t, err)
	assert.True(t, ok, "the new grant's fence writes")
	f3 := grantAndRelease(t, s, "other:lock", 1, 0)
	assert.Greater(t, f3, fg, "a name granted only after the restart too")
}

// waitInSync waits until the replica's link to the master is up and it
// has every byte of the master's stream. The bound only catches a hang.
func waitInSync(t *testing.T, master, replica *Store, masterPort int) {
	t.Helper()
	deadline := time.Now().Add(hangCatch)
	for {
		mo := infoField(t, master, "replication", "master_repl_offset") // first: the replica must reach it
		link := infoField(t, replica, "replication", "master_link_status")
		port := infoField(t, replica, "replication", "master_port")
		ro := infoField(t, replica, "replication", "slave_repl_offset")
		if link == "up" && port == strconv.Itoa(masterPort) && mo != "" && ro == mo {
			return
		}
		require.True(t, time.Now().Before(deadline), "replica not in sync within %v: link %q port %q offsets %s/%s",
			hangCatch, link, port, mo, ro)
		time.Sleep(10 * time.Millisecond)
	}
}

// The grants a failover loses are those the master made after the replica
// last heard from it: here the replica is promoted by hand before them, so
// they are lost for certain, and the new master must still mint above
// them.
func TestFencesGoOnUpAcrossAFailoverThatLostTheGrant(t *testing.T) {
	noDelay := "repl-diskless-sync-delay 0" // the full sync at once, not after 5 s
	master := redistest.Start(t, noDelay)
	replica := redistest.Start(t, noDelay, redistest.ReplicaOf(master))
	ms := open(t, "redis://"+master.Addr+"/0")
	rs := open(t, "redis://"+replica.Addr+"/0")

	const name, fresh = "orders:lock", "invoices:lock"
	f0 := grantAndRelease(t, ms, name, 1, 0)
	waitInSync(t, ms, rs, master.Port)
	f, err := rs.Fence(name)
	require.NoError(t, err)
	require.Equal(t, f0, f, "the replica has the first grant's fence")
	found, err := rs.Exists(name)
	require.NoError(t, err)
	require.False(t, found, "and its release")

	// The failover, before the next grants: the replica becomes a master
	// and hears no more from the old one.
	_, err = rs.do(nil, "replicaof", "no", "one")
	require.NoError(t, err)
	require.Equal(t, "master", infoField(t, rs, "replication", "role"))

	// Grants the failover loses: on the old master, which still takes them.
	f1 := grantAndRelease(t, ms, name, 4, f0)
	fg := grantFenced(t, ms, name, "g") // held when the master dies
	require.Greater(t, fg, f1)
	f1Fresh := grantAndRelease(t, ms, fresh, 3, 0)
	master.Stop()

	promoted := open(t, "redis://"+replica.Addr+"/0")
	f, err = promoted.Fence(name)
	require.NoError(t, err)
	require.Equal(t, f0, f, "the new master lost the later grants' fences")
	require.Less(t, f, f1)
	f, err = promoted.Fence(fresh)
	require.NoError(t, err)
	require.Zero(t, f, "the new master never had the fence key of a name granted only after the promotion")

	ok, err := backend.SetFenced(promoted, "orders:data", []byte("g"), 0, name, fg)
	require.NoError(t, err, "a stale fence is an answer, not an error")
	assert.False(t, ok, "the lost holder's fence is refused on the new master")

	f2 := grantFenced(t, promoted, name, "new")
	assert.Greater(t, f2, f1, "a grant on the new master is above every grant the failover lost")
	assert.Greater(t, f2, fg, "and above the lost holder's")
	f2Fresh := grantFenced(t, promoted, fresh, "new")
	assert.Greater(t, f2Fresh, f1Fresh, "also for a name whose fence key the new master never had")

	ok, err = backend.SetFenced(promoted, "orders:data", []byte("g"), 0, name, fg)
	require.NoError(t, err)
	assert.False(t, ok, "the lost holder's fence is refused after the new grant")
	ok, err = backend.SetFenced(promoted, "orders:data", []byte("new"), 0, name, f2)
	require.NoError(t, err)
	assert.True(t, ok, "the new grant's fence writes")
}
