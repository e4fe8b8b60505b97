package integration

import (
	"context"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/redisstore"
	"github.com/ephpm/ephpm/sessionkeys"
)

// PHP processes waiting in session_start() for one session's lock on
// Redis are served in the order they came: each starts only once the one
// before it is in the lock's line, then the lock is released, and each
// appends its number to the session as it gets it. Every release hands
// the lock to the next in line (redisstore/queue.go).
//
// The order is promised to waiters that keep their place: a waiter keeps
// it by renewing a lease at least once per LineStep, so one that gets no
// CPU for longer than its lease (a host far over its cores) loses its
// place, by design. The server tells every lapsed lease or unclaimed
// hand-over as an expired key; with one seen, the test asserts only that
// every waiter was served once.
func TestSessionWaitersAreServedInArrivalOrder(t *testing.T) {
	php := lookPath(t, "php")
	srv := redistest.Start(t, "notify-keyspace-events Ex")
	lapsed := expiredKeys(t, srv.Addr)
	const sid, n = "arrival", 6
	// The test holds the lock first, through a store with the key rules
	// the extension gives its own (session keys in the session's slot).
	s, err := redisstore.Open("redis://"+srv.Addr, redisstore.Options{
		Colocated: []string{sessionkeys.DataPrefix, sessionkeys.LockPrefix},
	})
	require.NoError(t, err)
	defer s.Close()
	lock := sessionkeys.LockKey(sid)
	_, err = s.SetNX(lock, []byte("test"), time.Hour) // released below, however slow the host
	require.NoError(t, err)
	inLine := func() int {
		out, err := exec.Command(redistest.CLIBinary(), "-p", strconv.Itoa(srv.Port),
			"zcard", "ephpm:line:{"+sid+"}").Output()
		require.NoError(t, err)
		k, err := strconv.Atoi(strings.TrimSpace(string(out)))
		require.NoError(t, err)
		return k
	}

	add := script(t, "add.php", "<?php\nsession_id('"+sid+"');\nsession_start();\n"+
		"$_SESSION['order'][] = (int)$argv[1];\necho 'ok';\n")
	args := func(path string, extra ...string) []string {
		return append([]string{"-n", "-d", "extension=" + extension(t),
			"-d", "ephpm.kv_backend=redis://" + srv.Addr, "-d", "session.save_handler=ephpm",
			"-d", "session.use_cookies=0", "-d", "session.cache_limiter=",
			"-d", "ephpm.session_lock_wait=600", path}, extra...) // a hang catch: the first waits while the rest start
	}
	type proc struct {
		cmd *exec.Cmd
		out *strings.Builder
	}
	var procs []proc
	for i := 1; i <= n; i++ {
		cmd := exec.Command(php, args(add, strconv.Itoa(i))...)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		procs = append(procs, proc{cmd, out})
		require.Eventually(t, func() bool { return inLine() == i }, 2*time.Minute, time.Millisecond,
			"process %d in line", i)
	}
	released, err := s.DelIfEq(lock, []byte("test"))
	require.NoError(t, err)
	require.True(t, released)
	for i, p := range procs {
		require.NoError(t, p.cmd.Wait(), "process %d: %s", i+1, p.out)
		assert.Equal(t, "ok", p.out.String(), "process %d", i+1)
	}

	read := script(t, "read.php", "<?php\nsession_id('"+sid+"');\nsession_start(['read_and_close' => true]);\n"+
		"echo implode(',', $_SESSION['order']);\n")
	out, err := exec.Command(php, args(read)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, 0, inLine(), "nobody left in line")
	if keys := lapsed(); len(keys) > 0 {
		t.Logf("a waiter lost its place (expired: %v): served %s", keys, out)
		order := strings.Split(string(out), ",")
		sort.Strings(order)
		assert.Equal(t, []string{"1", "2", "3", "4", "5", "6"}, order, "each served once")
		return
	}
	assert.Equal(t, "1,2,3,4,5,6", string(out), "served in the order they came")
}

// expiredKeys subscribes to the expired-key events of the server at addr
// (started with notify-keyspace-events Ex) and returns a function that
// lists the keys that expired since the subscription.
func expiredKeys(t *testing.T, addr string) func() []string {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	sub := c.Subscribe(context.Background(), "__keyevent@0__:expired")
	_, err := sub.Receive(context.Background()) // the subscription is in place
	require.NoError(t, err)
	var mu sync.Mutex
	var keys []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range sub.Channel() {
			mu.Lock()
			keys = append(keys, m.Payload)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { sub.Close(); <-done })
	return func() []string {
		// The server sends its events in order: once a marker key's own
		// expiry has arrived, so has every event before it.
		ctx := context.Background()
		require.NoError(t, c.Set(ctx, "expired-marker", "1", time.Millisecond).Err())
		require.Eventually(t, func() bool {
			c.Get(ctx, "expired-marker") // expires it, if the server has not yet
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(keys, "expired-marker")
		}, time.Minute, time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		return slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == "expired-marker" })
	}
}
