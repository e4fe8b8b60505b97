package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/session"
)

// testOptions are the key rules the bridge opens a store with: session
// data and locks share a slot and are pinned.
var testOptions = Options{
	Colocated: []string{session.DataPrefix, session.LockPrefix},
	Pinned:    []string{session.DataPrefix, session.LockPrefix},
}

// testKey is the Redis key of key in a store opened with testOptions.
func testKey(key string) string { return (&Store{opts: testOptions}).redisKey(key) }

// open opens a store on url with testOptions, closed when t ends.
func open(t testing.TB, url string) *Store {
	t.Helper()
	s, err := Open(url, testOptions)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRedisPassesTheContract(t *testing.T) {
	srv := redistest.Start(t)
	s, err := Open("redis://"+srv.Addr+"/0?read_timeout=2s", testOptions)
	require.NoError(t, err)
	defer s.Close()
	backendtest.Run(t, s)
}

func TestSessionKeysShareASlot(t *testing.T) {
	assert.Equal(t, "session:{abc}", testKey("session:abc"))
	assert.Equal(t, "session_lock:{abc}", testKey("session_lock:abc"))
	assert.Equal(t, "cache:abc", testKey("cache:abc"))
	assert.Equal(t, "session:abc", (&Store{}).redisKey("session:abc"), "no rule, no hash tag")
}

func TestParse(t *testing.T) {
	for _, bad := range []string{
		"ftp://x", "redis://x?max_retries=3", "redis://x?bogus=1", "redis+sentinel://x:1",
		"redis://x?tls_ca=/nonexistent", "rediss://x?tls_ca=/nonexistent", "rediss://x?tls_cert=/a",
		"unix+cluster:///tmp/x", "redis://x/notadb",
	} {
		_, err := parse(bad)
		assert.ErrorIs(t, err, ErrConfig, bad)
	}
	c, err := parse("redis://u:p@127.0.0.1:7000/2?dial_timeout=1s&pool_size=4")
	o, mode := c.opts, c.mode
	require.NoError(t, err)
	assert.Equal(t, Standalone, mode)
	assert.Equal(t, []string{"127.0.0.1:7000"}, o.Addrs)
	assert.Equal(t, 2, o.DB)
	assert.Equal(t, time.Second, o.DialTimeout)
	assert.Equal(t, 4, o.PoolSize)
	assert.Equal(t, -1, o.MaxRetries, "retries are always off")
	assert.Equal(t, "p", o.Password)

	c, err = parse("redis+cluster://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002")
	o, mode = c.opts, c.mode
	require.NoError(t, err)
	assert.Equal(t, Cluster, mode)
	assert.Len(t, o.Addrs, 3)
	c, err = parse("redis+cluster://u:p@127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002?read_timeout=1s")
	o = c.opts
	require.NoError(t, err)
	assert.Equal(t, []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}, o.Addrs)
	assert.Equal(t, time.Second, o.ReadTimeout)
	assert.Equal(t, "p", o.Password)

	c, err = parse("redis+sentinel://:sp@127.0.0.1:26379,127.0.0.1:26380/1?master_name=mymaster&password=dp")
	o, mode = c.opts, c.mode
	require.NoError(t, err)
	assert.Equal(t, Sentinel, mode)
	assert.Equal(t, "mymaster", o.MasterName)
	assert.Equal(t, "sp", o.SentinelPassword)
	assert.Equal(t, "dp", o.Password)
	assert.Len(t, o.Addrs, 2)
	assert.Equal(t, 1, o.DB)

	c, err = parse("unix:///tmp/redis.sock?db=3")
	o = c.opts
	require.NoError(t, err)
	assert.NotNil(t, o.Dialer)
	assert.Equal(t, 3, o.DB)
}

// A server that is gone makes calls fail fast with an error, never a
// plausible answer; when it is back, the same client works again.
func TestServerGoneAndBack(t *testing.T) {
	srv := redistest.Start(t)
	s, err := Open("redis://"+srv.Addr+"?dial_timeout=200ms&read_timeout=200ms&write_timeout=200ms", testOptions)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Set("k", []byte("v"), 0))

	srv.Stop()
	start := time.Now()
	_, err = s.SetNX("lock", []byte("t"), time.Minute)
	assert.Error(t, err, "an unreachable server is an error, not 'held'")
	_, err = s.DelIfEq("lock", []byte("t"))
	assert.Error(t, err)
	_, _, err = s.GetInto("k", nil)
	assert.Error(t, err)
	assert.Less(t, time.Since(start), 3*time.Second, "no hang past the timeouts")
	assert.False(t, errors.Is(err, ErrConfig))

	srv.Restart(t)
	require.Eventually(t, func() bool { return s.Set("k", []byte("v"), 0) == nil }, 5*time.Second, 50*time.Millisecond)
	out, err := s.SetNX("lock", []byte("t"), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, "inserted", out.String())
}

func TestNearCache(t *testing.T) {
	srv := redistest.Start(t)
	s, err := Open("redis://"+srv.Addr, Options{Near: NearCache{Prefixes: []string{"cfg:", "session:"}, Staleness: 300 * time.Millisecond, MaxBytes: 1 << 20},
		Colocated: testOptions.Colocated, Pinned: testOptions.Pinned})
	require.NoError(t, err)
	defer s.Close()
	other, err := Open("redis://"+srv.Addr, testOptions) // another process, as it were
	require.NoError(t, err)
	defer other.Close()

	read := func(st *Store, key string) string {
		dst := make([]byte, 64)
		n, found, err := st.GetInto(key, dst)
		require.NoError(t, err)
		if !found {
			return "<none>"
		}
		return string(dst[:n])
	}
	require.NoError(t, s.Set("cfg:a", []byte("v1"), 0))
	require.NoError(t, s.Set("session:x", []byte("s1"), 0))
	require.NoError(t, s.Set("plain", []byte("p1"), 0))
	read(s, "cfg:a")
	read(s, "session:x")
	read(s, "plain")
	require.Eventually(t, func() bool { _, ok := s.near.get("cfg:a"); return ok }, time.Second, time.Millisecond,
		"ristretto applies sets asynchronously")

	require.NoError(t, other.Set("cfg:a", []byte("v2"), 0))
	require.NoError(t, other.Set("session:x", []byte("s2"), 0))
	require.NoError(t, other.Set("plain", []byte("p2"), 0))
	assert.Equal(t, "v1", read(s, "cfg:a"), "served from the near cache within the staleness bound")
	assert.Equal(t, "s2", read(s, "session:x"), "session keys are never cached")
	assert.Equal(t, "p2", read(s, "plain"), "keys outside the prefixes are never cached")

	require.Eventually(t, func() bool { return read(s, "cfg:a") == "v2" }, 2*time.Second, 10*time.Millisecond,
		"fresh again once the staleness bound passed")

	require.NoError(t, s.Set("cfg:a", []byte("v3"), 0)) // a write through this process
	assert.Equal(t, "v3", read(s, "cfg:a"), "invalidated by a write through this process")
}
