package redisstore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/lockwait"
	"github.com/ephpm/ephpm/sessionkeys"
)

// evicting is the configuration of a server that evicts keys when full.
func evicting(policy string) []string {
	return []string{"maxmemory 3mb", "maxmemory-policy " + policy}
}

// admin is a plain client for changing a server's configuration.
func admin(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// checkEvictionEvery sets evictionCheckEvery for the stores t opens.
// Tests that drop a chosen reply set it long, so that no check of the
// policy falls due and takes the drop instead.
func checkEvictionEvery(t *testing.T, d time.Duration) {
	old := evictionCheckEvery
	evictionCheckEvery = d
	t.Cleanup(func() { evictionCheckEvery = old })
}

// refusedForEviction asserts that err is the guard's: it names the policy
// and the fix, says that nothing was done (contract.ErrNothingDone: nothing was
// sent, so the outcome is known), and wraps none of contract's other errors (the
// bridge reports it as E_UNAVAILABLE).
func refusedForEviction(t *testing.T, err error, what string, names ...string) {
	t.Helper()
	require.ErrorIs(t, err, ErrEvictingServer, what)
	assert.ErrorIs(t, err, contract.ErrNothingDone, what)
	assert.True(t, strings.HasPrefix(err.Error(), "nothing was written or granted: the Redis server may evict keys: "), "%s: %v", what, err)
	for _, s := range append(names, "noeviction", "allow_evicting_server=1") {
		assert.Contains(t, err.Error(), s, what)
	}
	for _, known := range []error{contract.ErrInvalidArgument, contract.ErrNoMemory, contract.ErrNotInteger, contract.ErrOverflow} {
		assert.NotErrorIs(t, err, known, what)
	}
}

// The scenario of the issue: on a server that evicts, A's lock and a
// session would be evicted by ordinary caching and B granted the lock.
// Every call that needs exclusion or durability is refused instead;
// plain reads and writes go on.
func TestAnEvictingServerRefusesLocksAndSessions(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "volatile-lru"} {
		t.Run(policy, func(t *testing.T) {
			srv := redistest.Start(t, evicting(policy)...)
			s := open(t, "redis://"+srv.Addr)
			data, lock := sessionkeys.DataKey("sid"), sessionkeys.LockKey("sid")

			_, err := s.SetNX("lock", []byte("A"), 300*time.Second)
			refusedForEviction(t, err, "SetNX", policy, "maxmemory 3145728", srv.Addr)
			_, err = (&lockwait.Locker{Store: s}).Acquire(lock, []byte("A"), time.Minute, time.Second)
			refusedForEviction(t, err, "Locker.Acquire", policy)
			_, err = s.DelIfEq("lock", []byte("A"))
			refusedForEviction(t, err, "DelIfEq", policy)
			_, err = s.ExpireIfEq("lock", []byte("A"), time.Minute)
			refusedForEviction(t, err, "ExpireIfEq", policy)
			_, err = backend.SetGuarded(s, data, []byte("v"), time.Minute, lock, []byte("A"))
			refusedForEviction(t, err, "SetGuarded", policy)
			_, err = backend.DelGuarded(s, data, lock, []byte("A"))
			refusedForEviction(t, err, "DelGuarded", policy)
			refusedForEviction(t, s.Set(data, []byte("v"), time.Minute), "Set of session data", policy)
			_, _, err = s.GetInto(data, nil)
			refusedForEviction(t, err, "GetInto of session data", policy)
			_, err = s.Del(data)
			refusedForEviction(t, err, "Del of session data", policy)
			_, err = s.Expire(data, time.Minute)
			refusedForEviction(t, err, "Expire of session data", policy)

			// The application's cache works, evictions and all.
			value := []byte(strings.Repeat("x", 4096))
			for i := 0; i < 5000; i++ {
				require.NoError(t, s.Set(fmt.Sprintf("cache:%d", i), value, time.Hour))
			}
			dst := make([]byte, 4096)
			n, found, err := s.GetInto("cache:4999", dst)
			require.NoError(t, err)
			assert.True(t, found)
			assert.Equal(t, value, dst[:n])
			c, err := s.IncrBy("counter", 2, 0)
			require.NoError(t, err)
			assert.Equal(t, int64(2), c)
			_, err = s.Del("cache:4999")
			require.NoError(t, err)

			// The refused calls changed nothing.
			for _, key := range []string{"lock", data, lock} {
				n, err := admin(t, srv.Addr).Exists(ctx, testKey(key)).Result()
				require.NoError(t, err)
				assert.Zero(t, n, key)
			}
		})
	}
}

// allow_evicting_server=1 is the operator's opt-in: the guard is off.
func TestAllowEvictingServerOptsIn(t *testing.T) {
	srv := redistest.Start(t, evicting("allkeys-lru")...)
	s := open(t, "redis://"+srv.Addr+"?allow_evicting_server=1")
	out, err := s.SetNX("lock", []byte("A"), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, contract.Inserted, out)
	ok, err := s.DelIfEq("lock", []byte("A"))
	require.NoError(t, err)
	assert.True(t, ok)
	res, err := (&lockwait.Locker{Store: s}).Acquire(sessionkeys.LockKey("sid"), []byte("A"), time.Minute, time.Second)
	require.NoError(t, err)
	assert.True(t, res.Acquired)

	for _, bad := range []string{"yes", "true", ""} {
		_, err := parse("redis://" + srv.Addr + "?allow_evicting_server=" + bad)
		assert.ErrorIs(t, err, ErrConfig, bad)
	}
	c, err := parse("redis://" + srv.Addr + "?allow_evicting_server=0")
	require.NoError(t, err)
	assert.False(t, c.allowEvicting)
}

// A CONFIG SET at run time is noticed within evictionCheckEvery, in both
// directions: once the verdict in hand is a period old (its generation has
// moved on, by the guard's own timer), the next call asks again and
// notices. How late the host runs that timer is not asserted; a verdict
// never renewed fails at a generous limit.
func TestAConfigSetIsNoticedWithinTheCheckPeriod(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	_, err := s.SetNX("k:first", []byte("v"), time.Minute)
	require.NoError(t, err, "maxmemory 0: nothing is evicted")

	// periodPassed waits until the verdict the guard holds is out of date.
	periodPassed := func() {
		g := s.evict
		require.Eventually(t, func() bool {
			v := g.last.Load()
			return v == nil || v.gen != g.gen.Load()
		}, evictionCheckEvery+30*time.Second, time.Millisecond, "the verdict was never renewed")
	}
	a := admin(t, srv.Addr)
	require.NoError(t, a.ConfigSet(ctx, "maxmemory", "3mb").Err())
	require.NoError(t, a.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err())
	periodPassed()
	_, err = s.SetNX("k:evicting", []byte("v"), time.Minute)
	require.Error(t, err, "noticed within the period")
	refusedForEviction(t, err, "SetNX after CONFIG SET", "volatile-lru")

	require.NoError(t, a.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	periodPassed()
	_, err = s.SetNX("k:again", []byte("v"), time.Minute)
	assert.NoError(t, err, "noticed within the period")
}

// A new connection (here, to a server restarted with another
// configuration) makes the next call learn the policy again, long before
// the period would.
func TestANewConnectionLearnsThePolicyAgain(t *testing.T) {
	checkEvictionEvery(t, time.Hour)
	srv := redistest.Start(t, evicting("allkeys-lru")...)
	require.NoError(t, admin(t, srv.Addr).ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	s := open(t, "redis://"+srv.Addr)
	_, err := s.SetNX("before", []byte("v"), time.Minute)
	require.NoError(t, err)

	srv.Restart(t)                                  // back to its file: allkeys-lru
	s.SetNX("reconnects", []byte("v"), time.Minute) // checked before it found the connection closed
	_, err = s.SetNX("after", []byte("v"), time.Minute)
	refusedForEviction(t, err, "SetNX after the reconnect", "allkeys-lru")
}

// In a Cluster every master counts: one that may evict refuses locks on
// keys of every master.
func TestClusterEveryMasterCounts(t *testing.T) {
	nodes := redistest.StartCluster(t)
	a := admin(t, nodes[2].Addr)
	require.NoError(t, a.ConfigSet(ctx, "maxmemory", "3mb").Err())
	require.NoError(t, a.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	s := open(t, clusterURL(nodes))
	for i := 0; i < 10; i++ { // keys on every master
		_, err := s.SetNX(fmt.Sprintf("lock:%d", i), []byte("A"), time.Minute)
		refusedForEviction(t, err, "SetNX", "allkeys-lru", nodes[2].Addr)
	}
	require.NoError(t, s.Set("cache", []byte("v"), 0))
}

// Under Sentinel the current master counts.
func TestSentinelMasterCounts(t *testing.T) {
	master := redistest.Start(t, evicting("volatile-lru")...)
	sentinel := redistest.StartSentinel(t, master)
	s := open(t, "redis+sentinel://"+sentinel.Addr+"?master_name=mymaster")
	_, err := s.SetNX("lock", []byte("A"), time.Minute)
	refusedForEviction(t, err, "SetNX", "volatile-lru", "the master mymaster")
	require.NoError(t, s.Set("cache", []byte("v"), 0))
}

// The policy comes from INFO, else CONFIG GET; a server that answers
// neither cannot be trusted with locks.
func TestThePolicyFromInfoElseConfig(t *testing.T) {
	srv := redistest.Start(t, evicting("allkeys-lru")...)
	a := admin(t, srv.Addr)
	for _, rule := range []string{
		"SETUSER noconfig on >pw ~* &* +@all -config",
		"SETUSER noinfo on >pw ~* &* +@all -info",
		"SETUSER neither on >pw ~* &* +@all -info -config",
	} {
		args := []any{"acl"}
		for _, w := range strings.Fields(rule) {
			args = append(args, w)
		}
		require.NoError(t, a.Do(ctx, args...).Err(), rule)
	}
	for _, user := range []string{"noconfig", "noinfo"} {
		s := open(t, "redis://"+user+":pw@"+srv.Addr)
		_, err := s.SetNX("lock", []byte("A"), time.Minute)
		refusedForEviction(t, err, user, "allkeys-lru")
	}
	s := open(t, "redis://neither:pw@"+srv.Addr)
	_, err := s.SetNX("lock", []byte("A"), time.Minute)
	refusedForEviction(t, err, "neither", "does not say", "NOPERM")

	require.NoError(t, a.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	s = open(t, "redis://noinfo:pw@"+srv.Addr)
	_, err = s.SetNX("lock", []byte("A"), time.Minute)
	require.NoError(t, err, "learned from CONFIG GET")
}

// A failed handshake is no refusal of INFO: a wrong password makes the
// guarded call fail with the server's own reason, not with "may evict".
func TestAWrongPasswordIsNotBlamedOnEviction(t *testing.T) {
	srv := redistest.Start(t)
	require.NoError(t, admin(t, srv.Addr).Do(ctx, "acl", "setuser", "u", "on", ">right", "~*", "&*", "+@all").Err())
	s := open(t, "redis://u:wrong@"+srv.Addr)
	_, err := s.SetNX("lock", []byte("A"), time.Minute)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrEvictingServer)
	assert.Contains(t, err.Error(), "WRONGPASS")
	assert.NotContains(t, err.Error(), "evict")
}
