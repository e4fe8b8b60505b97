// Package integration drives the built extension in real PHP processes:
// php-fpm workers sharing sessions through Redis, and PHP processes racing
// for one lock. It needs EPHPM_SO (the built ephpm.so, with libephpm.so
// beside it); ctest sets it, and without it the tests skip.
package integration

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/internal/segname"
)

func extension(t *testing.T) string {
	so := os.Getenv("EPHPM_SO")
	if so == "" {
		t.Skip("EPHPM_SO is not set (ctest sets it to the built ephpm.so)")
	}
	return so
}

func lookPath(t *testing.T, names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Skipf("none of %v installed", names)
	return ""
}

// fpm starts php-fpm with pm=static and n workers, the extension loaded
// with ini, and stops it by PID when the test ends. It returns the socket.
// The pool has a name of its own (so its default segment, segname.FPMPool's
// name for it, is the test's), removed when the test ends.
func fpm(t *testing.T, n int, ini map[string]string) string {
	return fpmPools(t, ini, fpmPool{n: n})[0]
}

// fpmPool is a pool of fpmPools: its n workers (pm=static) and lines of
// its configuration besides (request_terminate_timeout = 2s).
type fpmPool struct {
	n     int
	extra string
}

// fpmPools is fpm with one master serving pools, each on a socket of its
// own (returned in their order) and with a name of its own.
func fpmPools(t *testing.T, ini map[string]string, pools ...fpmPool) []string {
	bin := lookPath(t, "php-fpm8.2", "/usr/sbin/php-fpm8.2", "php-fpm")
	dir := t.TempDir()
	conf := fmt.Sprintf("[global]\nerror_log = %s/fpm.log\ndaemonize = no\n", dir)
	var socks []string
	for i, p := range pools {
		sock := filepath.Join(dir, fmt.Sprintf("fpm%d.sock", i))
		pool := fmt.Sprintf("it%d-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9, i)
		t.Cleanup(func() { removeSegment(segname.FPMPool(pool), os.Geteuid()) })
		conf += fmt.Sprintf("[%s]\nlisten = %s\nlisten.backlog = 1024\npm = static\npm.max_children = %d\n%s\n",
			pool, sock, p.n, p.extra)
		socks = append(socks, sock)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fpm.conf"), []byte(conf), 0o600))
	args := []string{"-n", "-F", "-y", filepath.Join(dir, "fpm.conf"), "-d", "extension=" + extension(t)}
	if os.Geteuid() == 0 {
		args = append(args, "-R")
	}
	for k, v := range ini {
		args = append(args, "-d", k+"="+v)
	}
	cmd := exec.Command(bin, args...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); { // a hang catch
		up := true
		for _, sock := range socks {
			if _, err := os.Stat(sock); err != nil {
				up = false
			}
		}
		if up {
			return socks
		}
		time.Sleep(50 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "fpm.log"))
	t.Fatalf("php-fpm did not start: %s", log)
	return nil
}

func script(t *testing.T, name, code string) string {
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(code), 0o644))
	return path
}

// backends are the shared stores the php-fpm tests run on: the default (no
// ephpm.* setting: the pool's shared-memory segment) and Redis. A backend
// value of "" sets nothing.
func backends(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"default": func(t *testing.T) string { return "" },
		"redis":   func(t *testing.T) string { return "redis://" + redistest.Start(t).Addr },
	}
}

func withBackend(ini map[string]string, backend string) map[string]string {
	if backend != "" {
		ini["ephpm.kv_backend"] = backend
	}
	return ini
}

// addScript adds the key k<i> to the session, after 1 ms of work with the
// session open; countScript reads the session and prints how many keys it
// has, how many worker processes wrote them, and the backend serving it.
const (
	addScript = `<?php
session_start();
usleep(1000); // work done while the session is open
$_SESSION['k' . $_GET['i']] = getmypid();
echo count($_SESSION);
`
	countScript = `<?php
session_start(['read_and_close' => true]);
$pids = array_unique(array_values($_SESSION));
echo count($_SESSION), ' ', count($pids), ' ', ephpm_kv_stats()['backend'];
`
)

// 100 concurrent requests with one session cookie, each adding its own key
// to $_SESSION, across 8 php-fpm workers sharing the store: all 100 are
// kept, with the defaults and on Redis.
func TestFPMConcurrentSessionRequestsKeepEveryWrite(t *testing.T) {
	for name, backend := range backends(t) {
		t.Run(name, func(t *testing.T) { fpmSessionRequests(t, backend(t)) })
	}
}

func fpmSessionRequests(t *testing.T, backend string) {
	want := ""
	if backend == "" {
		want = "shm" // the default under php-fpm
	}
	sessionRequests(t, fpmServer(t, 8, withBackend(sessionIni(), backend)), want)
}

// sessionIni is what the session tests set: the handler, and every
// session id taken as given.
func sessionIni() map[string]string {
	return map[string]string{
		"session.save_handler":    "ephpm",
		"session.use_strict_mode": "0",
		"session.cache_limiter":   "",
		// 100 requests take the session in turn: the last waits for the 99
		// before it, seconds on a loaded host, and one that waited out the
		// budget would go on unlocked. A hang catch, not a speed bound.
		"ephpm.session_lock_wait": "600",
	}
}

// sessionRequests sends 3 bursts of 100 concurrent requests on one session
// cookie to srv (8 workers), each adding its own key: all 100 are kept, by
// more than one worker. With want set, it is the backend serving.
func sessionRequests(t *testing.T, srv server, want string) {
	add, count := srv.script(t, "add.php", addScript), srv.script(t, "count.php", countScript)
	for run := 0; run < 3; run++ {
		sid := fmt.Sprintf("fpmrun%dabcdef%d", run, time.Now().UnixNano())
		burst(t, srv, add, sid, 100)
		body, err := srv.do(count, "", sid)
		require.NoError(t, err)
		var kept, workers int
		var served string
		fmt.Sscan(body, &kept, &workers, &served)
		assert.Equal(t, 100, kept, "run %d: %s", run, body)
		if want != "" {
			assert.Equal(t, want, served, "the backend serving")
		}
		assert.Greater(t, workers, 1, "run %d: the requests were spread over workers", run)
		t.Logf("run %d: %d/100 kept, written by %d workers", run, kept, workers)
	}
}

// burst sends n requests for script with one session cookie to srv,
// released together (query i=0..n-1), fails t for each that fails or
// warns, and returns the wall time from their release to the last answer.
func burst(t *testing.T, srv server, script, sid string, n int) time.Duration {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			body, err := srv.do(script, fmt.Sprintf("i=%d", i), sid)
			if err == nil && strings.Contains(body, "Warning") {
				err = fmt.Errorf("request %d: %s", i, body)
			}
			if err != nil {
				errs <- err
			}
		}(i)
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	wall := time.Since(t0)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return wall
}

// racer is a long-lived PHP process that, for each round the test sends
// it, blocks on the round's barrier file (a shared flock the test holds
// exclusively), then races for the round's lock with ephpm_kv_setnx.
const racer = `<?php
while (($line = fgets(STDIN)) !== false) {
    [$round, $barrier] = explode(' ', trim($line));
    $f = fopen($barrier, 'r');
    echo "ready\n";
    flock($f, LOCK_SH);              // released when the test unlocks
    $won = ephpm_kv_setnx("race:$round", (string) getmypid(), 60);
    flock($f, LOCK_UN);
    fclose($f);
    echo $won ? "won\n" : "lost\n";
}
`

func raceProcesses(t *testing.T, n, rounds int, backend string) {
	php := lookPath(t, "php")
	path := script(t, "racer.php", racer)
	type proc struct {
		in  io.WriteCloser
		out *bufio.Scanner
	}
	procs := make([]proc, n)
	for i := range procs {
		cmd := exec.Command(php, "-n", "-d", "extension="+extension(t), "-d", "ephpm.kv_backend="+backend, path)
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { in.Close(); cmd.Wait() })
		procs[i] = proc{in, bufio.NewScanner(out)}
	}
	dir := t.TempDir()
	for r := 0; r < rounds; r++ {
		barrier := filepath.Join(dir, fmt.Sprintf("barrier-%d", r))
		f, err := os.Create(barrier)
		require.NoError(t, err)
		require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
		round := fmt.Sprintf("%d-%d %s\n", n, r, barrier)
		for _, p := range procs {
			io.WriteString(p.in, round)
		}
		for _, p := range procs {
			require.True(t, p.out.Scan())
			require.Equal(t, "ready", p.out.Text())
		}
		time.Sleep(2 * time.Millisecond)                                // let the last ones reach flock
		require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN)) // release them together
		winners := 0
		for _, p := range procs {
			require.True(t, p.out.Scan())
			if p.out.Text() == "won" {
				winners++
			} else {
				require.Equal(t, "lost", p.out.Text())
			}
		}
		f.Close()
		require.Equal(t, 1, winners, "round %d of %d processes", r, n)
	}
}

func TestProcessesRacingForALockHaveOneWinner(t *testing.T) {
	srv := redistest.Start(t)
	for _, n := range []int{20, 64} {
		t.Run(fmt.Sprintf("%d processes", n), func(t *testing.T) {
			raceProcesses(t, n, 200, "redis://"+srv.Addr)
		})
	}
}
