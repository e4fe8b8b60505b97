package integration

import (
	"context"
	"os"
	"path/filepath"
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
)

// A request that holds its session on Redis and is killed by php-fpm's
// request_terminate_timeout (it sleeps: PHP does nothing meanwhile, and
// the library's renewals go on) leaves the session within a lease of its
// death, not its lock's TTL (30 s, the default), and ten requests waiting
// in line behind it take it one at a time, in the order they came.
//
// What is asserted on the clock is the server's: no look at the lock ever
// finds more than a lease (2 s) left, so a holder that stops renewing
// loses it at most a lease later. How soon the first waiter then runs is
// the host's pace, bounded here only to tell a lease from the TTL (10 s,
// where the TTL would take about 27). Each waiter counts itself in while
// it holds the session (one at a time: it finds nobody else inside), and
// each is started only once the one before it is in line; the order is
// asserted unless the server tells of a waiter's lease or a hand-over that
// lapsed (a waiter that got no CPU for its lease loses its place, by
// design), as in TestSessionWaitersAreServedInArrivalOrder.
func TestFPMKilledSessionHolderOnRedisLapsesWithinALease(t *testing.T) {
	srv := redistest.Start(t, "notify-keyspace-events Ex")
	lapsed := expiredKeys(t, srv.Addr)
	const sid, n = "leaseholder0123456789abcd", 10
	socks := fpmPools(t, map[string]string{"session.save_handler": "ephpm", "ephpm.kv_backend": "redis://" + srv.Addr,
		"ephpm.session_lock_wait": "600", "max_execution_time": "0"}, // hang catches
		fpmPool{n: 1, extra: "request_terminate_timeout = 4s"}, fpmPool{n: n + 1})
	dir := workerDir(t)
	holders := server{dir: dir, do: fcgiGet("unix", socks[0])}
	waiters := server{dir: dir, do: fcgiGet("unix", socks[1])}
	hold := holders.script(t, "hold.php", `<?php
session_start();
$_SESSION['holder'] = 1; // never written: the request is killed
file_put_contents($_GET['pidfile'], getmypid());
sleep(600);
`)
	wait := waiters.script(t, "wait.php", `<?php
session_start();
$got = microtime(true);
ephpm_kv_incr('served');
$inside = ephpm_kv_incr('inside');
usleep(20000); // the session held
ephpm_kv_incr('inside', -1);
$_SESSION['order'][] = (int)$_GET['i'];
printf('%d %.6f', $inside, $got);
`)
	read := waiters.script(t, "read.php", `<?php
session_start(['read_and_close' => true]);
echo implode(',', $_SESSION['order'] ?? []);
`)

	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	ctx := context.Background()
	lock := "session_lock:{" + sid + "}"
	// Every look at the lock, from the holder's grant to the last waiter's
	// release, finds no more than a lease left.
	var mu sync.Mutex
	var longest time.Duration
	looking, looked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(looked)
		for {
			select {
			case <-looking:
				return
			case <-time.After(10 * time.Millisecond): // the pace of the looks, nothing waits on it
			}
			if d, err := c.PTTL(ctx, lock).Result(); err == nil {
				mu.Lock()
				longest = max(longest, d)
				mu.Unlock()
			}
		}
	}()

	pidfile := filepath.Join(dir, "holder.pid")
	held := make(chan error, 1)
	go func() { _, err := holders.do(hold, "pidfile="+pidfile, sid); held <- err }()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) { // a hang catch
		if b, _ := os.ReadFile(pidfile); len(b) > 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the holding request did not start")
	}
	count := func(cmd *redis.IntCmd) int64 { v, _ := cmd.Result(); return v }
	type answer struct {
		out string
		err error
	}
	answers := make([]chan answer, n+1)
	for i := 1; i <= n; i++ {
		answers[i] = make(chan answer, 1)
		go func(i int) {
			out, err := waiters.do(wait, "i="+strconv.Itoa(i), sid)
			answers[i] <- answer{out, err}
		}(i)
		// In line, or in line and served since (the holder may be dead
		// already on a slow host): the next starts after it.
		require.Eventually(t, func() bool {
			served, _ := strconv.Atoi(c.Get(ctx, "served").Val())
			return count(c.ZCard(ctx, "ephpm:line:{"+sid+"}"))+int64(served) == int64(i)
		}, 2*time.Minute, time.Millisecond, "waiter %d in line", i)
	}
	<-held // php-fpm ends the connection when its worker dies
	died := time.Now()

	var firstGrant time.Time
	for i := 1; i <= n; i++ {
		a := <-answers[i]
		require.NoError(t, a.err, "waiter %d", i)
		f := strings.Fields(a.out)
		require.Len(t, f, 2, "waiter %d: %s", i, a.out)
		assert.Equal(t, "1", f[0], "waiter %d found another inside: one at a time", i)
		got, err := strconv.ParseFloat(f[1], 64)
		require.NoError(t, err)
		at := time.UnixMicro(int64(got * 1e6))
		if firstGrant.IsZero() || at.Before(firstGrant) {
			firstGrant = at
		}
	}
	close(looking)
	<-looked
	assert.LessOrEqual(t, longest, redisstore.DefaultLease, "a look found more than a lease left on the session's lock")
	took := firstGrant.Sub(died)
	t.Logf("the first waiter had the session %v after the holder's death (lease %v)", took.Round(time.Millisecond),
		redisstore.DefaultLease)
	assert.Less(t, took, 10*time.Second, "the killed holder's lock held the session for its TTL, not a lease")

	out, err := waiters.do(read, "", sid)
	require.NoError(t, err)
	if keys := slicesWithout(lapsed(), lock); len(keys) > 0 {
		t.Logf("a waiter lost its place (expired: %v): served %s", keys, out)
		order := strings.Split(out, ",")
		sort.Slice(order, func(a, b int) bool { x, _ := strconv.Atoi(order[a]); y, _ := strconv.Atoi(order[b]); return x < y })
		assert.Equal(t, "1,2,3,4,5,6,7,8,9,10", strings.Join(order, ","), "each served once")
		return
	}
	assert.Equal(t, "1,2,3,4,5,6,7,8,9,10", out, "served in the order they came")
}

// slicesWithout is keys without one occurrence of key: the killed
// holder's lock lapses once, as it should.
func slicesWithout(keys []string, key string) []string {
	for i, k := range keys {
		if k == key {
			return append(keys[:i:i], keys[i+1:]...)
		}
	}
	return keys
}
