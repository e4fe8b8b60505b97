// Command sessions measures the case sessions are locked for: 100
// concurrent requests with one session cookie, each adding its own key to
// $_SESSION, against php-fpm (pm=static, 8 workers). It runs, side by side:
// ephpm with no ephpm.* setting (the pool's shared-memory segment), ephpm
// on Redis, PHP's files handler (flock), and phpredis's handler with
// locking on (default and tuned polling) and off, all Redis handlers on one
// redis-server; for each amount of work per request (-hold-us, a list) it
// prints how many of the 100 keys each kept, the wall time, its ratio to
// the serial limit (requests x work) and the p50/p99 latency.
//
//	go run ./bench/sessions -ext build/modules/ephpm.so -hold-us 1000,5000
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ephpm/ephpm/internal/fcgi"
)

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// start runs a server command and returns a function that stops it by PID.
func start(name string, args ...string) func() {
	cmd := exec.Command(name, args...)
	must(cmd.Start())
	return func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }
}

func waitFor(network, addr string) {
	for i := 0; i < 200; i++ {
		if c, err := net.Dial(network, addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	must(fmt.Errorf("nothing listens on %s", addr))
}

type result struct {
	kept     int
	wall     time.Duration
	p50, p99 time.Duration
	failed   int
}

func run(sock, add, count string, n int, sid string) result {
	var wg sync.WaitGroup
	lat := make([]time.Duration, n)
	var mu sync.Mutex
	failed := 0
	begin := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-begin
			t := time.Now()
			resp, err := fcgi.Do("unix", sock, map[string]string{
				"SCRIPT_FILENAME": add, "REQUEST_METHOD": "GET",
				"QUERY_STRING": "i=" + strconv.Itoa(i), "HTTP_COOKIE": "PHPSESSID=" + sid,
			}, 120*time.Second)
			lat[i] = time.Since(t)
			if err != nil || len(resp.Body) == 0 || resp.Body[0] < '0' || resp.Body[0] > '9' {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		}(i)
	}
	t0 := time.Now()
	close(begin)
	wg.Wait()
	wall := time.Since(t0)
	resp, err := fcgi.Do("unix", sock, map[string]string{
		"SCRIPT_FILENAME": count, "REQUEST_METHOD": "GET", "HTTP_COOKIE": "PHPSESSID=" + sid,
	}, 10*time.Second)
	must(err)
	kept, _ := strconv.Atoi(string(resp.Body))
	slices.Sort(lat)
	return result{kept: kept, wall: wall, p50: lat[n/2], p99: lat[n*99/100], failed: failed}
}

func main() {
	ext := flag.String("ext", "build/modules/ephpm.so", "the built ephpm.so")
	n := flag.Int("requests", 100, "concurrent requests on one session")
	holds := flag.String("hold-us", "1000,5000", "microseconds each request works with the session open (a list)")
	flag.Parse()
	extPath, err := filepath.Abs(*ext)
	must(err)

	dir, err := os.MkdirTemp("", "ephpm-sessions-bench")
	must(err)
	defer os.RemoveAll(dir)
	port := freePort()
	stopRedis := start("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--dir", dir)
	defer stopRedis()
	waitFor("tcp", "127.0.0.1:"+strconv.Itoa(port))
	redis := "tcp://127.0.0.1:" + strconv.Itoa(port)
	phpredis := []string{"extension=igbinary", "extension=msgpack", "extension=redis",
		"session.save_handler=redis", "session.save_path=" + redis}
	must(os.Mkdir(filepath.Join(dir, "files"), 0o700))

	handlers := []struct {
		name string
		ini  []string
	}{
		{"ephpm, defaults (shm segment)", []string{"extension=" + extPath, "session.save_handler=ephpm"}},
		{"ephpm (Redis backend)", []string{
			"extension=" + extPath, "ephpm.kv_backend=redis://127.0.0.1:" + strconv.Itoa(port),
			"session.save_handler=ephpm",
		}},
		{"files (flock)", []string{"session.save_handler=files", "session.save_path=" + filepath.Join(dir, "files")}},
		{"phpredis, locking on", append(phpredis, "redis.session.locking_enabled=1")},
		// Polls every 100 µs instead of 20 ms, and long enough for 100 turns.
		{"phpredis, locking on, tuned polling", append(phpredis, "redis.session.locking_enabled=1",
			"redis.session.lock_wait_time=100", "redis.session.lock_retries=1000000")},
		{"phpredis, locking off", phpredis},
	}
	count := filepath.Join(dir, "count.php")
	must(os.WriteFile(count, []byte("<?php\nsession_start(['read_and_close' => true]);\necho count($_SESSION);\n"), 0o644))
	for _, field := range strings.Split(*holds, ",") {
		hold, err := strconv.Atoi(strings.TrimSpace(field))
		must(err)
		add := filepath.Join(dir, fmt.Sprintf("add%d.php", hold))
		must(os.WriteFile(add, []byte(fmt.Sprintf("<?php\nsession_start();\nusleep(%d);\n$_SESSION['k' . $_GET['i']] = 1;\necho count($_SESSION);\n", hold)), 0o644))
		serial := time.Duration(*n*hold) * time.Microsecond
		fmt.Printf("%d concurrent requests, one session, 8 php-fpm workers, %d µs of work per request (serial limit %v)\n",
			*n, hold, serial)
		w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(w, "handler\tkept\twall time\tx serial\tp50\tp99\tfailed\t\n")
		for h, handler := range handlers {
			pool := fmt.Sprintf("bench%d-%d", os.Getpid(), h)
			sock := filepath.Join(dir, pool+".sock")
			conf := filepath.Join(dir, pool+".conf")
			must(os.WriteFile(conf, []byte(fmt.Sprintf("[global]\nerror_log = %s/%s.log\ndaemonize = no\n[%s]\n"+
				"listen = %s\nlisten.backlog = 1024\npm = static\npm.max_children = 8\n", dir, pool, pool, sock)), 0o600))
			args := []string{"-n", "-F", "-y", conf, "-d", "session.use_strict_mode=0", "-d", "session.cache_limiter="}
			if os.Geteuid() == 0 {
				args = append(args, "-R")
			}
			for _, kv := range handler.ini {
				args = append(args, "-d", kv)
			}
			fpm := "php-fpm8.2"
			if _, err := exec.LookPath(fpm); err != nil {
				fpm = "/usr/sbin/php-fpm8.2"
			}
			stop := start(fpm, args...)
			waitFor("unix", sock)
			// Each worker takes one of 16 warm-up requests first (they wait
			// on one session's lock), so that what is measured is not a
			// worker's first request (ephpm loads its library then).
			run(sock, add, count, 16, fmt.Sprintf("warm%d%d", h, time.Now().UnixNano()))
			r := run(sock, add, count, *n, fmt.Sprintf("bench%d%d", h, time.Now().UnixNano()))
			stop()
			os.Remove(fmt.Sprintf("/dev/shm/ephpm-fpm-%s.%d", pool, os.Geteuid()))
			fmt.Fprintf(w, "%s\t%d/%d\t%v\t%.2fx\t%v\t%v\t%d\t\n", handler.name, r.kept, *n,
				r.wall.Round(time.Millisecond), float64(r.wall)/float64(serial),
				r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond), r.failed)
		}
		w.Flush()
		fmt.Println()
	}
}
