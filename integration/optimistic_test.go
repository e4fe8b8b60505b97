package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/internal/redistest"
)

// optimisticBackends are the shared stores php-fpm workers can use, each
// with ephpm.session_lock_mode=optimistic.
func optimisticBackends(t *testing.T) map[string]map[string]string {
	srv := redistest.Start(t)
	shm := fmt.Sprintf("itopt%d", os.Getpid())
	t.Cleanup(func() { removeSegment(shm, os.Geteuid()) })
	base := func(backend string) map[string]string {
		return map[string]string{
			"ephpm.kv_backend":        backend,
			"ephpm.session_lock_mode": "optimistic",
			"session.save_handler":    "ephpm",
			"session.use_strict_mode": "0",
			"session.cache_limiter":   "",
		}
	}
	return map[string]map[string]string{
		"redis": base("redis://" + srv.Addr),
		"shm":   base("shm://" + shm),
	}
}

func get(t *testing.T, srv server, file, sid, query string) string {
	body, err := srv.do(file, query, sid)
	require.NoError(t, err)
	return body
}

// 100 concurrent requests with one session cookie, each setting its own
// key, across 8 php-fpm workers in optimistic mode: all 100 are kept,
// although no request holds the lock while it works.
func TestFPMOptimisticSessionsKeepEveryKey(t *testing.T) {
	add, count := script(t, "add.php", addScript), script(t, "count.php", countScript)
	for name, ini := range optimisticBackends(t) {
		t.Run(name, func(t *testing.T) {
			srv := fpmServer(t, 8, ini)
			for run := 0; run < 3; run++ {
				sid := fmt.Sprintf("opt%s%dabcdef%d", name, run, time.Now().UnixNano())
				wall := burst(t, srv, add, sid, 100)
				var kept, workers int
				fmt.Sscan(get(t, srv, count, sid, ""), &kept, &workers)
				assert.Equal(t, 100, kept, "run %d", run)
				assert.Greater(t, workers, 1, "run %d: the requests were spread over workers", run)
				// The wall time is reported, not asserted: bench/sessions measures it.
				t.Logf("run %d: %d/100 kept, written by %d workers, %v", run, kept, workers, wall.Round(time.Millisecond))
			}
		})
	}
}

// Two requests that read the session before either writes and both set
// one key: the later write wins for that key, and every other key of both
// is kept. Request A reads, then blocks on a lock the test holds; B reads,
// writes and ends; then A is let go.
func TestFPMOptimisticSameKeyLaterWriteWins(t *testing.T) {
	dir := t.TempDir()
	barrier := filepath.Join(dir, "barrier")
	ready := filepath.Join(dir, "ready")
	f, err := os.Create(barrier)
	require.NoError(t, err)
	defer f.Close()
	set := script(t, "set.php", `<?php
session_start();
$_SESSION['shared'] = $_GET['who'];
$_SESSION['own' . $_GET['who']] = 1;
if ($_GET['who'] === 'A') {
    $f = fopen($_GET['barrier'], 'r');
    file_put_contents($_GET['ready'], 'read');
    flock($f, LOCK_SH);             // until the test lets go
}
echo 'ok';
`)
	show := script(t, "show.php", `<?php
session_start(['read_and_close' => true]);
ksort($_SESSION);
echo json_encode($_SESSION);
`)
	for name, ini := range optimisticBackends(t) {
		t.Run(name, func(t *testing.T) {
			srv := fpmServer(t, 2, ini)
			sid := fmt.Sprintf("optsame%s%d", name, time.Now().UnixNano())
			seed := script(t, "seed.php", `<?php session_start(); $_SESSION['kept'] = 'before'; echo 'ok';`)
			require.Equal(t, "ok", get(t, srv, seed, sid, ""))
			os.Remove(ready)
			require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
			done := make(chan string)
			go func() {
				done <- get(t, srv, set, sid, "who=A&barrier="+barrier+"&ready="+ready)
			}()
			for deadline := time.Now().Add(2 * time.Minute); ; { // A has read the session when it writes the file
				if _, err := os.Stat(ready); err == nil {
					break
				}
				require.True(t, time.Now().Before(deadline), "request A did not start") // a hang catch
				time.Sleep(10 * time.Millisecond)
			}
			require.Equal(t, "ok", get(t, srv, set, sid, "who=B"))
			require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
			require.Equal(t, "ok", <-done)
			assert.Equal(t, `{"kept":"before","ownA":1,"ownB":1,"shared":"A"}`, get(t, srv, show, sid, ""))
		})
	}
}
