package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/sessionkeys"
)

// testOptions are the key rules the bridge opens a store with: session
// data and locks share a slot and are pinned.
var testOptions = Options{
	Colocated: []string{sessionkeys.DataPrefix, sessionkeys.LockPrefix},
	Pinned:    []string{sessionkeys.DataPrefix, sessionkeys.LockPrefix},
}

// testKey is the Redis key of key in a store opened with testOptions.
func testKey(key string) string { return (&Store{opts: testOptions}).redisKey(key) }

// hangCatch bounds the tests' waits for what must come (a wake-up, a
// grant, a subscription standing): it only catches a hang, never the
// host's pace (a loaded host under the race detector runs a goroutine or
// answers a round trip seconds late).
const hangCatch = 2 * time.Minute

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
	backendtest.Run(t, s, backendtest.ServerMillis)
}

func TestSessionKeysShareASlot(t *testing.T) {
	assert.Equal(t, "session:{abc}", testKey("session:abc"))
	assert.Equal(t, "session_lock:{abc}", testKey("session_lock:abc"))
	assert.Equal(t, "cache:abc", testKey("cache:abc"))
	assert.Equal(t, "session:abc", (&Store{}).redisKey("session:abc"), "no rule, no hash tag")
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
	assert.Less(t, time.Since(start), hangCatch/4, "no hang past the timeouts") // a hang catch, not a speed bound
	assert.False(t, errors.Is(err, ErrConfig))

	srv.Restart(t)
	require.Eventually(t, func() bool { return s.Set("k", []byte("v"), 0) == nil }, hangCatch, 50*time.Millisecond)
	out, err := s.SetNX("lock", []byte("t"), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, "inserted", out.String())
}
