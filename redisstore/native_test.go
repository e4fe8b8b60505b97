package redisstore

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/lockwait"
)

func TestNativeOf(t *testing.T) {
	for info, want := range map[string]native{
		"# Server\r\nredis_version:7.0.15\r\n": 0,
		"redis_version:8.0.6\r\n":              0,
		"redis_version:8.4.0\r\n":              delExCmd | setIfEqCmd,
		"redis_version:10.0.1\r\n":             delExCmd | setIfEqCmd,
		"redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.2\r\n": 0,
		"redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.0\r\n": setIfEqCmd,
		"redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n": delIfEqCmd | setIfEqCmd,
		"redis_version:7.2.4\r\nserver_name:valkey\r\n":                         0,
		"redis_version:8.4.0\r\nserver_name:somethingelse\r\n":                  0,
		"redis_version:8.x\r\n": 0,
		"":                      0,
		"redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:255.255.255\r\n": delIfEqCmd | setIfEqCmd,
	} {
		assert.Equal(t, want, nativeOf(info), "%q", info)
	}
}

func TestNativeForms(t *testing.T) {
	tok := []byte("t")
	assert.Equal(t, []any{"delifeq", "k", tok}, (delIfEqCmd|delExCmd).release("k", tok), "DELIFEQ first")
	assert.Equal(t, []any{"delex", "k", "ifeq", tok}, delExCmd.release("k", tok))
	assert.Nil(t, setIfEqCmd.release("k", tok))
	assert.Equal(t, []any{"set", "k", tok, "ifeq", tok, "px", int64(5)}, setIfEqCmd.refresh("k", tok, 5))
	assert.Equal(t, []any{"set", "k", tok, "ifeq", tok}, setIfEqCmd.refresh("k", tok, 0), "SET without PX clears the TTL")
	assert.Nil(t, setIfEqCmd.refresh("k", tok, -1), "PX refuses a negative TTL")
	assert.Nil(t, delIfEqCmd.refresh("k", tok, 5))
}

// serverNative is what the server at addr has, as the store learns it.
func serverNative(t *testing.T, addr string) native {
	info, err := admin(t, addr).Info(ctx, "server").Result()
	require.NoError(t, err)
	return nativeOf(info)
}

// calls is how many times the server at addr ran each command (INFO
// commandstats), by lower-case name.
func calls(t *testing.T, addrs ...string) map[string]int64 {
	n := map[string]int64{}
	for _, addr := range addrs {
		text, err := admin(t, addr).Info(ctx, "commandstats").Result()
		require.NoError(t, err)
		for _, line := range strings.Split(text, "\n") {
			name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
			if !ok {
				continue
			}
			count, _, _ := strings.Cut(rest, ",")
			c, err := strconv.ParseInt(count, 10, 64)
			require.NoError(t, err, line)
			n[name] += c
		}
	}
	return n
}

// The scripts stay correct on a server that has the native commands:
// the contract on the scripts alone.
func TestRedisPassesTheContractWithScriptsOnly(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr+"/0?read_timeout=2s")
	s.scriptsOnly = true
	backendtest.Run(t, s, backendtest.ServerMillis)
}

// Where the server has the native commands, a release of a key that
// cannot have a line and a refresh are those commands and no script;
// elsewhere, the scripts. A release of a key that can have a line is the
// script on every server (it hands the key to the line's head). On the
// direct path and in a Cluster (through go-redis, per node).
func TestNativeCommandsWhereTheServerHasThem(t *testing.T) {
	srv := redistest.Start(t)
	nodes := redistest.StartCluster(t)
	for _, tc := range []struct {
		name  string
		url   string
		addrs []string
	}{
		{"direct", "redis://" + srv.Addr, []string{srv.Addr}},
		{"cluster", clusterURL(nodes), []string{nodes[0].Addr, nodes[1].Addr, nodes[2].Addr}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := serverNative(t, tc.addrs[0])
			s := open(t, tc.url)
			tok := []byte("tok")
			keys := []string{"a}", "b}", "c}"} // spread over the nodes; no line (queueKeys)
			cycle := func() {
				_, err := s.SetNX("lined", tok, time.Minute)
				require.NoError(t, err)
				ok, err := s.DelIfEq("lined", tok)
				require.NoError(t, err)
				assert.True(t, ok)
				for _, k := range keys {
					_, err := s.SetNX(k, tok, time.Minute)
					require.NoError(t, err)
					ok, err := s.ExpireIfEq(k, tok, 2*time.Minute)
					require.NoError(t, err)
					assert.True(t, ok)
					ok, err = s.DelIfEq(k, tok)
					require.NoError(t, err)
					assert.True(t, ok)
				}
			}
			cycle() // each node loads the scripts it runs (NOSCRIPT, then EVAL)
			before := calls(t, tc.addrs...)
			cycle()
			after := calls(t, tc.addrs...)
			ran := func(cmd string) int64 { return after[cmd] - before[cmd] }
			n := int64(len(keys))
			scripts := int64(1) // the lined key's release
			if have&releaseCmds != 0 {
				assert.Equal(t, n+1, ran("publish"), "a native release publishes beside it, as the lined key's script does")
			} else {
				scripts += n
			}
			assert.Equal(t, n*int64(have&delIfEqCmd/delIfEqCmd), ran("delifeq"))
			assert.Equal(t, n*int64(have&delExCmd/delExCmd), ran("delex"))
			if have&setIfEqCmd != 0 {
				assert.Equal(t, 2*n+1, ran("set"), "SET NX, then SET IFEQ")
			} else {
				assert.Equal(t, n+1, ran("set"), "SET NX")
				scripts += n
			}
			assert.Equal(t, scripts, ran("evalsha"), "scripts; the server has %03b", have)
			assert.Zero(t, ran("eval"))
		})
	}
}

// A connection that takes the server to have a command it does not (a
// renamed command, a version that says more than it has) answers
// "unknown command": the command ran nothing, so the script runs instead,
// and the connection stops sending it.
func TestUnknownNativeCommandFallsBackToTheScript(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr+"?pool_size=1")
	tok := []byte("tok")
	// "k}" can have no line (queueKeys): its release is the native command
	// where the server has it.
	_, err := s.SetNX("k}", tok, time.Minute)
	require.NoError(t, err)
	s.run(delIfEqScript, []string{"none"}, tok, "ch") // the server loads the script
	s.direct.mu.Lock()
	require.Len(t, s.direct.idle, 1)
	c := s.direct.idle[0]
	c.native, c.learned = delExCmd, true // no server here has DELEX but Redis 8.4+
	s.direct.mu.Unlock()
	if serverNative(t, srv.Addr)&delExCmd != 0 {
		t.Skip("this server has DELEX")
	}
	before := calls(t, srv.Addr)
	ok, err := s.DelIfEq("k}", tok)
	require.NoError(t, err)
	assert.True(t, ok, "released by the script")
	found, err := s.Exists("k}")
	require.NoError(t, err)
	assert.False(t, found)
	assert.Equal(t, native(0), c.native, "DELEX forgotten on this connection")
	_, err = s.SetNX("k}", tok, time.Minute)
	require.NoError(t, err)
	ok, err = s.DelIfEq("k}", tok)
	require.NoError(t, err)
	assert.True(t, ok)
	after := calls(t, srv.Addr)
	assert.Equal(t, int64(2), after["evalsha"]-before["evalsha"], "both releases are the script")
}

// A full noeviction server refuses every SET (OOM) but runs a script's
// PEXPIRE: a lock is refreshed there on any server, the native SET IFEQ's
// refusal running the script instead.
func TestRefreshOnAFullServer(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	tok := []byte("tok")
	_, err := s.SetNX("lock", tok, time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Set("ballast", make([]byte, 2<<20), 0))
	a := admin(t, srv.Addr)
	require.NoError(t, a.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	require.NoError(t, a.ConfigSet(ctx, "maxmemory", "1mb").Err())
	t.Cleanup(func() { a.ConfigSet(ctx, "maxmemory", "0") })
	_, err = s.SetNX("other", tok, time.Minute)
	require.Error(t, err, "full: writes are refused")
	ok, err := s.ExpireIfEq("lock", tok, 2*time.Minute)
	require.NoError(t, err)
	assert.True(t, ok)
	ttl, _, err := s.PTTL("lock")
	require.NoError(t, err)
	assert.Greater(t, ttl, 90*time.Second, "refreshed")
	ok, err = s.DelIfEq("lock", tok)
	require.NoError(t, err)
	assert.True(t, ok, "released")
}

// A waiter blocked in Wait, or in lockwait.Locker's wait (set_nx_wait),
// is woken by a release, not by its timeout (a minute; the lock's TTL is
// five): on the native path as on the scripts, on the direct path and in a
// Cluster. The release comes once the waiter has subscribed and looked
// (its PTTL has run, after which it only blocks). A Wait that runs out
// returns false, so true is the wake; the Locker, whose pause is the
// timeout, has the lock before that pause could have ended only if woken.
// How soon the host runs the woken waiter is not asserted.
func TestReleaseWakesAWaiterAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	nodes := redistest.StartCluster(t)
	clusterBusCarriesPublish(t, nodes)
	const timeout = time.Minute
	for _, tc := range []struct {
		name, url   string
		scriptsOnly bool
		addrs       []string
	}{
		{"direct", "redis://" + srv.Addr, false, []string{srv.Addr}},
		{"direct-scripts", "redis://" + srv.Addr, true, []string{srv.Addr}},
		{"cluster", clusterURL(nodes), false, []string{nodes[0].Addr, nodes[1].Addr, nodes[2].Addr}},
	} {
		s := open(t, tc.url)
		s.scriptsOnly = tc.scriptsOnly
		waits := map[string]func(key string) bool{
			"Wait": func(key string) bool {
				free, err := s.Wait(key, timeout)
				return err == nil && free
			},
			"Locker": func(key string) bool {
				l := &lockwait.Locker{Store: s, Backoff: lockwait.Backoff{Initial: timeout, Max: timeout}}
				res, err := l.Acquire(key, []byte("second"), time.Minute, 2*timeout)
				return err == nil && res.Acquired
			},
		}
		for name, wait := range waits {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				// No line for this key (queueKeys): the release is the
				// native command where the server has one, and its PUBLISH
				// is what wakes the waiter.
				key := "wake}" + tc.name + ":" + name
				tok := []byte("first")
				_, err := s.SetNX(key, tok, 5*time.Minute)
				require.NoError(t, err)
				pttls := calls(t, tc.addrs...)["pttl"]
				type outcome struct {
					free bool
					at   time.Time
				}
				woken := make(chan outcome, 1)
				began := time.Now()
				go func() {
					free := wait(key) // returns by its timeout at the latest
					woken <- outcome{free, time.Now()}
				}()
				require.Eventually(t, func() bool { return calls(t, tc.addrs...)["pttl"] > pttls },
					hangCatch, time.Millisecond, "the waiter looked and blocks")
				ok, err := s.DelIfEq(key, tok)
				require.NoError(t, err)
				require.True(t, ok)
				got := <-woken
				assert.True(t, got.free, "woken free")
				assert.Less(t, got.at.Sub(began), timeout, "woken by the release, not the timeout")
			})
		}
	}
}

// clusterBusCarriesPublish waits until a message published on any node of
// a new Cluster reaches a subscriber on every other: the nodes' links come
// up after the slots are served, and a PUBLISH before then reaches only
// its own node's subscribers.
func clusterBusCarriesPublish(t *testing.T, nodes []*redistest.Server) {
	for _, to := range nodes {
		sub := admin(t, to.Addr).Subscribe(ctx, "bus")
		_, err := sub.Receive(ctx) // the subscription stands
		require.NoError(t, err)
		for _, from := range nodes {
			pub := admin(t, from.Addr)
			require.Eventually(t, func() bool {
				require.NoError(t, pub.Publish(ctx, "bus", from.Addr).Err())
				m, err := sub.ReceiveTimeout(ctx, 20*time.Millisecond)
				return err == nil && m.(*redis.Message).Payload == from.Addr
			}, hangCatch, time.Millisecond, "%s to %s", from.Addr, to.Addr)
		}
		sub.Close()
	}
}
