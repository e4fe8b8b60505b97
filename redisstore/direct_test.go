package redisstore

import (
	"bytes"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/barrier"
	"github.com/ephpm/ephpm/internal/redistest"
)

// The direct path authenticates (a password, or an ACL user) and selects
// the database on every connection it opens.
func TestDirectAuthAndDatabase(t *testing.T) {
	srv := redistest.Start(t, "requirepass secret", "user app on >apppass ~* &* +@all")
	s := open(t, "redis://:secret@"+srv.Addr+"/3")
	require.NotNil(t, s.direct)
	backendtest.Run(t, s, backendtest.ServerMillis)
	require.NoError(t, s.Set("where", []byte("db3"), 0))
	v, err := s.c.Get(ctx, "where").Result()
	require.NoError(t, err)
	assert.Equal(t, "db3", v, "go-redis, on database 3, sees the direct path's write")

	user := open(t, "redis://app:apppass@"+srv.Addr+"/3")
	dst := make([]byte, 8)
	k, found, err := user.GetInto("where", dst)
	require.NoError(t, err)
	require.True(t, found, "same database")
	assert.Equal(t, "db3", string(dst[:k]))

	other := open(t, "redis://app:apppass@"+srv.Addr+"/4")
	_, found, err = other.GetInto("where", dst)
	require.NoError(t, err)
	assert.False(t, found, "another database")

	wrong := open(t, "redis://:nope@"+srv.Addr)
	_, _, err = wrong.GetInto("where", dst)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WRONGPASS")
}

// Values longer than the read buffer, and far longer, come back whole,
// into dst when it is large enough and as their length when it is not.
func TestDirectLargeValues(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	for _, size := range []int{wireBufSize - 10, wireBufSize, 5 * wireBufSize, 1 << 20} {
		v := bytes.Repeat([]byte{byte(size)}, size)
		v[0], v[size-1] = 'a', 'z'
		require.NoError(t, s.Set("big", v, 0))
		n, found, err := s.GetInto("big", make([]byte, 16))
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, size, n, "too small: the length")
		dst := make([]byte, size)
		n, _, err = s.GetInto("big", dst)
		require.NoError(t, err)
		assert.Equal(t, v, dst[:n])
		ok, err := s.Exists("big")
		require.NoError(t, err)
		assert.True(t, ok, "the connection is in step after the value")
	}
}

// With every connection busy, a call waits the pool timeout and fails
// with an error (it ran nothing); a freed connection serves the next.
func TestDirectPoolTimeout(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr+"?pool_size=1&pool_timeout=100ms")
	busy, err := s.direct.get()
	require.NoError(t, err)
	start := time.Now()
	_, err = s.SetNX("k", []byte("v"), time.Minute)
	assert.ErrorIs(t, err, errPoolTimeout)
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	s.direct.put(busy, true)
	out, err := s.SetNX("k", []byte("v"), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, contract.Inserted, out)
}

// The contract with a pool of two connections for many goroutines: they
// wait for each other's connections, and every outcome is still exact.
func TestDirectSmallPool(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr+"?pool_size=2")
	backendtest.Run(t, s, backendtest.ServerMillis)
}

// An idle connection the server closed (a restart, its idle timeout) is
// noticed before a command is written on it: the call dials anew and
// works, where writing on the dead one would have been an unknown outcome.
func TestDirectDropsAConnectionTheServerClosed(t *testing.T) {
	srv := redistest.Start(t, "timeout 1")
	s := open(t, "redis://"+srv.Addr)
	require.NoError(t, s.Set("k", []byte("v"), 0))
	require.Eventually(t, func() bool {
		s.direct.mu.Lock()
		defer s.direct.mu.Unlock()
		return len(s.direct.idle) == 1 && !s.direct.idle[0].raw.nothingPending()
	}, hangCatch, 50*time.Millisecond, "the server closes the idle connection")
	out, err := s.SetNX("k2", []byte("v"), time.Minute)
	require.NoError(t, err, "a SET NX is never written on a connection known to be dead")
	assert.Equal(t, contract.Inserted, out)
}

// A TTL under a millisecond is a TTL of one (PX 0 is refused, and 0 would
// mean none), on every member that takes one.
func TestSubMillisecondTTL(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	ttl := 500 * time.Microsecond
	require.NoError(t, s.Set("a", []byte("v"), ttl))
	out, err := s.SetNX("b", []byte("v"), ttl)
	require.NoError(t, err)
	assert.Equal(t, contract.Inserted, out)
	_, err = s.IncrBy("c", 1, ttl)
	require.NoError(t, err)
	require.NoError(t, s.Set("d", []byte("v"), 0))
	ok, err := s.Expire("d", ttl)
	require.NoError(t, err)
	assert.True(t, ok)
	time.Sleep(20 * time.Millisecond)
	for _, k := range []string{"a", "b", "c", "d"} {
		held, err := s.Exists(k)
		require.NoError(t, err)
		assert.False(t, held, "%s expired", k)
	}
}

// A URL with a user name and no password connects as the default user,
// as go-redis does, rather than failing every command.
func TestUserNameWithoutPassword(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://someuser@"+srv.Addr)
	require.NoError(t, s.Set("k", []byte("v"), 0))
}

// A reply that arrives after its command timed out is never read as the
// reply to the next command: the connection it was due on is closed. The
// server sleeps 3 s: the test looks until it has stopped answering before
// the SET, and until it answers again before the GET, so that no step
// depends on how soon the host runs the next (a host slower than the whole
// sleep skips the test).
func TestLateReplyIsNotTheNextCommandsReply(t *testing.T) {
	srv := redistest.Start(t, "enable-debug-command yes")
	s := open(t, "redis://"+srv.Addr+"?pool_size=1&read_timeout=200ms&pool_timeout=2s")
	require.NoError(t, s.Set("k", []byte("value"), 0))
	admin := open(t, "redis://"+srv.Addr)
	probe := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer probe.Close()
	require.NoError(t, probe.Ping(ctx).Err())
	go admin.c.Do(ctx, "debug", "sleep", "3") // the server stops answering
	require.Eventually(t, func() bool { return probe.Ping(ctx).Err() != nil }, hangCatch, 10*time.Millisecond,
		"the server stops answering")
	if err := s.Set("k", []byte("value"), 0); err == nil {
		t.Skip("the host took the server's whole 3 s sleep to send the SET")
	}
	require.Eventually(t, func() bool { return probe.Ping(ctx).Err() == nil }, hangCatch, 10*time.Millisecond,
		"the server answers again, and the SET's late reply has come")
	dst := make([]byte, 16)
	n, found, err := s.GetInto("k", dst)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "value", string(dst[:n]), "the GET's own reply, not the late +OK of the SET")
}

// Bytes left over after a reply (a server out of step with us) make the
// connection unusable: it is closed, not handed to the next command.
func TestBytesAfterAReplyRetireTheConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			stray := conns.Add(1) == 1 // the first connection's first reply
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for ; ; stray = false {
					if _, err := c.Read(buf); err != nil {
						return
					}
					if stray {
						c.Write([]byte(":1\r\n:666\r\n")) // one reply too many
					} else {
						c.Write([]byte(":1\r\n"))
					}
				}
			}()
		}
	}()
	s := open(t, "redis://"+l.Addr().String())
	for i := 0; i < 3; i++ {
		held, err := s.Exists("k")
		require.NoError(t, err)
		assert.True(t, held, "call %d read its own reply", i)
	}
	assert.Equal(t, int32(2), conns.Load(), "the connection with the stray reply was replaced, once")
}

// Commands in flight when the store closes come back to a closed pool:
// their connections are closed, not kept, and later calls fail.
func TestCloseWithCommandsInFlight(t *testing.T) {
	srv := redistest.Start(t, "enable-debug-command yes")
	s, err := Open("redis://"+srv.Addr+"?pool_size=2&pool_timeout=2s", testOptions)
	require.NoError(t, err)
	require.NoError(t, s.Set("k", []byte("v"), 0))
	admin := open(t, "redis://"+srv.Addr)
	go admin.c.Do(ctx, "debug", "sleep", "0.3")
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() {
		defer close(done)
		barrier.Race(4, func(int) bool { return s.Set("k", []byte("v"), 0) == nil })
	}()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, s.Close())
	<-done
	s.direct.mu.Lock()
	assert.Empty(t, s.direct.idle, "connections returned after Close are closed")
	s.direct.mu.Unlock()
	assert.Len(t, s.direct.slots, 0, "every slot given back")
	_, _, err = s.GetInto("k", nil)
	assert.ErrorIs(t, err, redis.ErrClosed)
}

// Against a server whose connects hang, calls stop waiting the whole dial
// timeout each once as many dials in a row have failed as the pool has
// slots: they fail at once with the last dial error, and one call dials
// again after the pause.
func TestDialsPauseAfterFailingInARow(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never answered: a TLS handshake hangs
		}
	}()
	s := open(t, "rediss://"+l.Addr().String()+"?pool_size=2&dial_timeout=200ms")
	var dialErr error
	for i := 0; i < 2; i++ {
		start := time.Now()
		_, _, dialErr = s.GetInto("k", nil)
		require.Error(t, dialErr)
		assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "dial %d waits its timeout", i)
	}
	// Paused: no dial (each answer says so, with the last dial's error).
	for i := 0; i < 10; i++ {
		_, _, err := s.GetInto("k", nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "not dialing again")
		assert.ErrorIs(t, err, dialErr, "the last dial's own error")
	}
	time.Sleep(dialPause)
	start := time.Now()
	_, _, err = s.GetInto("k", nil)
	require.Error(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "after the pause, one call dials")
}
