package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/redisstore"
)

// lockHolder takes "bound" with ephpm_kv_lock(bound: true) and "plain"
// without, says so, and sleeps: PHP does nothing meanwhile, and the
// library's renewals go on until the process is killed.
const lockHolder = `<?php
$bound = ephpm_kv_lock('bound', 60, 0.0, null, $fence, true);
$plain = ephpm_kv_lock('plain', 60);
echo ($bound !== false && $fence > 0 && $plain !== false) ? "held\n" : "refused\n";
sleep(600);
`

// lockTaker waits up to argv[1] seconds for "bound" and tries "plain"
// once, and prints what it got: "bound <seconds it waited> plain <0|1>
// <ms left on plain>".
const lockTaker = `<?php
$t = microtime(true);
$bound = ephpm_kv_lock('bound', 60, (float) $argv[1]);
$waited = microtime(true) - $t;
$plain = ephpm_kv_lock('plain', 60);
printf("%s %.3f plain %d %d\n", $bound === false ? 'refused' : 'bound', $waited, $plain !== false, ephpm_kv_pttl('plain'));
`

// A lock taken with ephpm_kv_lock(bound: true) by a process that is then
// SIGKILLed lapses at once on a shared-memory segment and within a lease
// on Redis, where a lock taken without lasts its TTL (60 s). On Redis,
// no look at the bound lock while its holder lives finds more than a lease
// left (the server's clock: its PTTL), so a holder that stops renewing
// loses it at most a lease later; how soon the next process then has it
// is the host's pace, bounded here only to tell a lease from the TTL.
func TestABoundLockOfAKilledProcessLapses(t *testing.T) {
	php := lookPath(t, "php")
	so := extension(t)
	holder, taker := script(t, "holder.php", lockHolder), script(t, "taker.php", lockTaker)
	run := func(t *testing.T, backend, wait string, look func()) (string, time.Time) {
		cmd := exec.Command(php, "-n", "-d", "extension="+so, "-d", "ephpm.kv_backend="+backend, holder)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		killed := false
		t.Cleanup(func() {
			if !killed {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
		lines := bufio.NewScanner(out)
		require.True(t, lines.Scan(), "the holder said nothing")
		require.Equal(t, "held", lines.Text())
		look()
		require.NoError(t, cmd.Process.Kill())
		cmd.Wait()
		killed = true
		died := time.Now()
		got, err := exec.Command(php, "-n", "-d", "extension="+so, "-d", "ephpm.kv_backend="+backend, taker, wait).CombinedOutput()
		require.NoError(t, err, "%s", got)
		return strings.TrimSpace(string(got)), died
	}
	// taken parses the taker's line: how long it waited, whether it got
	// "plain", and the ms left on "plain".
	taken := func(t *testing.T, line string) (time.Duration, bool, int64) {
		f := strings.Fields(line)
		require.Len(t, f, 5, line)
		require.Equal(t, "bound", f[0], "the killed holder's bound lock was not granted: %s", line)
		waited, err := strconv.ParseFloat(f[1], 64)
		require.NoError(t, err)
		left, err := strconv.ParseInt(f[4], 10, 64)
		require.NoError(t, err)
		return time.Duration(waited * float64(time.Second)), f[3] == "1", left
	}

	t.Run("shm", func(t *testing.T) {
		name := fmt.Sprintf("boundlock%d", os.Getpid())
		removeNewSegment(t, name, os.Geteuid())
		// Lapsed at once: the taker's one attempt (no wait) finds the
		// holder dead and takes the lock.
		line, _ := run(t, "shm://"+name, "0", func() {})
		_, plain, left := taken(t, line)
		assert.False(t, plain, "a lock taken without bound outlives its process")
		assert.Greater(t, left, int64(30000), "and keeps its TTL")
	})

	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr})
		defer c.Close()
		ctx := context.Background()
		var longest time.Duration
		line, died := run(t, "redis://"+srv.Addr, "30", func() {
			// Looks for three leases' time, across several renewals.
			for end := time.Now().Add(3 * redisstore.DefaultLease); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				d, err := c.PTTL(ctx, "bound").Result()
				require.NoError(t, err)
				require.Greater(t, d, time.Duration(0), "the live holder's lock lapsed")
				longest = max(longest, d)
			}
		})
		waited, plain, left := taken(t, line)
		assert.LessOrEqual(t, longest, redisstore.DefaultLease, "a look found more than a lease left on the bound lock")
		assert.False(t, plain, "a lock taken without bound outlives its process")
		assert.Greater(t, left, int64(30000), "and keeps its TTL")
		t.Logf("the bound lock was granted %v after its holder's death, %v into the wait (lease %v)",
			time.Since(died).Round(time.Millisecond), waited.Round(time.Millisecond), redisstore.DefaultLease)
		assert.Less(t, waited, 10*time.Second, "the killed holder's lock held for its TTL, not a lease")
	})
}
