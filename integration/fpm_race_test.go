package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// racerRequest is what each php-fpm request runs: it blocks on the round's
// barrier file (a shared flock the test holds exclusively), then races for
// the round's lock with ephpm_kv_setnx.
const racerRequest = `<?php
$f = fopen($_GET['barrier'], 'r');
flock($f, LOCK_SH);              // released when the test unlocks
$won = ephpm_kv_setnx('race:' . $_GET['round'], (string) getmypid(), 60);
flock($f, LOCK_UN);
// Which backend served, on the first and last rounds (stats walks the
// whole store: not in every round).
echo $won ? 'won' : 'lost', ' ', getmypid(), ' ', isset($_GET['stats']) ? ephpm_kv_stats()['backend'] : '-';
`

// flockWaiters counts the processes blocked in flock on the file st
// describes, from /proc/locks: a waiter's line has "->", then the lock's
// kind, its mode, the waiter's pid and the file as MAJOR:MINOR:INODE
// (device numbers in hex). It counts pids, not lines: a read of
// /proc/locks while locks change can list a lock and its waiters twice.
func flockWaiters(st *syscall.Stat_t) int {
	b, _ := os.ReadFile("/proc/locks")
	file := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	pids := map[string]bool{}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		f := strings.Fields(string(line))
		if len(f) >= 7 && f[1] == "->" && f[6] == file {
			pids[f[5]] = true
		}
	}
	return len(pids)
}

// race runs rounds of n workers of srv released together at a barrier,
// each racing for the round's lock with ephpm_kv_setnx: exactly one wins
// every round, and the n contenders are n different workers. With want
// set, the first and last rounds check that it is the backend serving.
func race(t *testing.T, srv server, n, rounds int, want string) {
	path := srv.script(t, "race.php", racerRequest)
	tag := strconv.FormatInt(time.Now().UnixNano(), 36)
	for r := 0; r < rounds; r++ {
		barrier := filepath.Join(srv.dir, fmt.Sprintf("barrier-%d", r))
		f, err := os.Create(barrier)
		require.NoError(t, err)
		require.NoError(t, f.Chmod(0o644))
		require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
		var st syscall.Stat_t
		require.NoError(t, syscall.Fstat(int(f.Fd()), &st))
		stats := ""
		if r == 0 || r == rounds-1 {
			stats = "&stats=1"
		}
		out := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				out[i], errs[i] = srv.do(path, fmt.Sprintf("round=%s-%d-%d&barrier=%s%s", tag, n, r, barrier, stats), "")
			}(i)
		}
		// Released together: once every contender waits on the barrier.
		// The count the wait ended on is the one checked: a second read of
		// /proc/locks may fail or be torn (flockWaiters then counts 0).
		deadline := time.Now().Add(2 * time.Minute) // a hang catch
		waiting := flockWaiters(&st)
		for waiting < n && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
			waiting = flockWaiters(&st)
		}
		require.Equal(t, n, waiting, "round %d: contenders at the barrier", r)
		require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
		wg.Wait()
		f.Close()
		os.Remove(barrier)
		winners, pids := 0, map[string]bool{}
		for i := 0; i < n; i++ {
			require.NoError(t, errs[i], "round %d", r)
			fields := strings.Fields(out[i])
			require.Len(t, fields, 3, "round %d: %q", r, out[i])
			if fields[0] == "won" {
				winners++
			} else {
				require.Equal(t, "lost", fields[0], "round %d: %q", r, out[i])
			}
			pids[fields[1]] = true
			if want != "" && stats != "" {
				require.Equal(t, want, fields[2], "the backend serving")
			}
		}
		require.Len(t, pids, n, "round %d: every contender in its own worker", r)
		require.Equal(t, 1, winners, "round %d of %d workers", r, n)
	}
}

// raceRounds is how many rounds each race runs: 200, or EPHPM_RACE_ROUNDS.
func raceRounds() int {
	if n, err := strconv.Atoi(os.Getenv("EPHPM_RACE_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 200
}

// 20 and 64 php-fpm workers, with the defaults (the pool's shared-memory
// segment) and on Redis, released together for the same lock: exactly one
// wins, every round.
func TestFPMWorkersRacingForALockHaveOneWinner(t *testing.T) {
	for name, backend := range backends(t) {
		t.Run(name, func(t *testing.T) {
			b := backend(t)
			for _, n := range []int{20, 64} {
				t.Run(fmt.Sprintf("%d workers", n), func(t *testing.T) {
					want := ""
					if b == "" {
						want = "shm" // the default under php-fpm
					}
					race(t, fpmServer(t, n, withBackend(map[string]string{}, b)), n, raceRounds(), want)
				})
			}
		})
	}
}
