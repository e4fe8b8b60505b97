// Command sessions measures the case sessions are locked for: 100
// concurrent requests with one session cookie, each adding its own key to
// $_SESSION, against php-fpm (pm=static, 8 workers). It runs, side by side:
// ephpm with no ephpm.* setting (the pool's shared-memory segment), ephpm on
// Redis (exclusive and optimistic lock modes), PHP's files handler (flock),
// and phpredis's handler with locking on (default and tuned polling) and
// off, all Redis handlers on one redis-server, and again on Valkey with
// -valkey; for each amount of work per
// request (-hold-us, a list) it prints how many of the 100 keys each kept,
// the wall time against the serial limit (requests x work: what one lock
// allows) and the parallel limit (the same over the 8 workers), the p50/p99
// latency, and the commands per request that Redis's INFO commandstats
// counted (which counts the commands a script runs as well as the script
// itself). Each worker serves a warm-up request first, so that what is
// measured is not a worker's first request (ephpm loads its library then).
//
// Two floors say what the host can do at best. The first row is the files
// handler with one php-fpm worker: the requests run one after another, no
// lock contended, nothing handed off, and what it takes beyond the serial
// limit is each request's whole cost (FastCGI, PHP's request, the session's
// open and write, usleep's oversleep); /floor is each row's wall time
// against it. With 8 workers a request's start and end overlap the holds
// of others, so a handler can beat that row; what it cannot beat is the
// sum of its own holds: each request times, in PHP, from session_start()'s
// return to session_write_close()'s, and its usleep() alone. "slept" is
// the sum of the usleep()s against the serial limit (what the host's
// timers add to the work), "held" the sum of the holds (the wall time a
// lock that passed on at no cost would give: beyond "slept", the write
// and the release), "idle" the wall time beyond that sum per request (the
// lock's hand-off, and the first request's start and the last's end).
// "hand-off" times each hand-off itself, in PHP, on hrtime's one clock:
// from a holder's call of session_write_close() to the next holder's
// return from session_start() (its write and release, the wake of the
// next, its read), the median and the 90th percentile. For the handlers
// that do not serialize (optimistic, no locking) the holds overlap and
// these say nothing.
//
//	go run ./bench/sessions -ext build/modules/ephpm.so -hold-us 1000,5000
//
// Each server has a replica, for the row that waits for it
// (wait_replicas=1); -valkey runs the Redis rows again on Valkey (bench/chroot-server.sh runs
// the matrix chroot's); -base runs another build's Redis exclusive row
// beside this one's, for an A/B in one run. -only keeps the handlers whose
// name contains it; -monitor FILE records
// Redis's MONITOR during each measured run into FILE.N (N the handler's
// row), for the hand-off timeline (bench/sessions/timeline).
//
// phpredis needs Debian's php-redis; without it its rows are left out.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ephpm/ephpm/internal/fcgi"
	"github.com/ephpm/ephpm/internal/segname"
	"github.com/ephpm/ephpm/shm"
)

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// cpuModel is the CPU's model name, as /proc/cpuinfo gives it.
func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
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
	held     time.Duration // the sum of the requests' holds, as PHP timed them
	slept    time.Duration // the sum of their usleep()s, as PHP timed them
	// handOff is the median, and handOff90 the 90th percentile, of the
	// hand-offs: from a holder's call of session_write_close() to the
	// return of the next holder's session_start() (hrtime: one monotonic
	// clock for every worker).
	handOff, handOff90 time.Duration
}

func run(sock, add, count string, n int, sid string) result {
	var wg sync.WaitGroup
	lat := make([]time.Duration, n)
	var mu sync.Mutex
	failed := 0
	var held, slept time.Duration
	type span struct{ start, end int64 }
	var spans []span
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
			// The body is "count hold_ns sleep_ns start_ns close_ns": the
			// last two hrtime() at session_start()'s return and before
			// session_write_close().
			var count, hold, sleep, started, closing int64
			if err != nil || len(resp.Body) == 0 || resp.Body[0] < '0' || resp.Body[0] > '9' {
				mu.Lock()
				failed++
				mu.Unlock()
			} else if _, err := fmt.Sscan(string(resp.Body), &count, &hold, &sleep, &started, &closing); err == nil {
				mu.Lock()
				held += time.Duration(hold)
				slept += time.Duration(sleep)
				spans = append(spans, span{started, closing})
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
	r := result{kept: kept, wall: wall, p50: lat[n/2], p99: lat[n*99/100], failed: failed, held: held, slept: slept}
	slices.SortFunc(spans, func(a, b span) int { return int(a.start - b.start) })
	var gaps []time.Duration
	for i := 1; i < len(spans); i++ {
		gaps = append(gaps, time.Duration(spans[i].start-spans[i-1].end))
	}
	if len(gaps) > 0 {
		slices.Sort(gaps)
		r.handOff, r.handOff90 = gaps[len(gaps)/2], gaps[len(gaps)*9/10]
	}
	return r
}

// redisCommands is what INFO commandstats says Redis ran since the last
// reset (then resets it): the total count and "cmd=n" for each command.
func redisCommands(port int) (int, string) {
	out, err := exec.Command("redis-cli", "-p", strconv.Itoa(port), "info", "commandstats").Output()
	must(err)
	must(exec.Command("redis-cli", "-p", strconv.Itoa(port), "config", "resetstat").Run())
	total := 0
	var per []string
	for _, line := range strings.Split(string(out), "\n") {
		// cmdstat_get:calls=200,usec=...
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
		name = strings.TrimPrefix(name, "cmdstat_")
		if name == "info" || name == "config|resetstat" || name == "config" {
			continue
		}
		total += calls
		per = append(per, fmt.Sprintf("%s=%d", name, calls))
	}
	slices.Sort(per)
	return total, strings.Join(per, " ")
}

// record runs redis-cli MONITOR into file until the returned function is
// called.
func record(port int, file string) func() {
	f, err := os.Create(file)
	must(err)
	cmd := exec.Command("redis-cli", "-p", strconv.Itoa(port), "monitor")
	cmd.Stdout = f
	must(cmd.Start())
	time.Sleep(100 * time.Millisecond) // MONITOR stands before the run
	return func() {
		time.Sleep(100 * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
	}
}

func main() {
	ext := flag.String("ext", "build/modules/ephpm.so", "the built ephpm.so")
	n := flag.Int("requests", 100, "concurrent requests on one session")
	holds := flag.String("hold-us", "1000,5000", "microseconds each request works with the session open (a list)")
	only := flag.String("only", "", "run only the handlers whose name contains this")
	monitor := flag.String("monitor", "", "record Redis's MONITOR of each measured run into this file, .N appended")
	base := flag.String("base", "", "another build's ephpm.so, whose Redis exclusive row runs beside this one's (an A/B in one run)")
	valkey := flag.String("valkey", "", "a command that runs valkey-server (bench/chroot-server.sh valkey-server): the Redis rows again on Valkey")
	flag.Parse()
	extPath, err := filepath.Abs(*ext)
	must(err)
	if *base != "" {
		*base, err = filepath.Abs(*base)
		must(err)
	}

	dir, err := os.MkdirTemp("", "ephpm-sessions-bench")
	must(err)
	defer os.RemoveAll(dir)
	// The Redis-protocol servers, each on a free port: redis-server, and
	// Valkey with -valkey.
	type server struct {
		name string
		port int
	}
	servers := []server{{"Redis", freePort()}}
	if *valkey != "" {
		servers = append(servers, server{"Valkey", freePort()})
	}
	for i, srv := range servers {
		cmd := []string{"redis-server"}
		if srv.name == "Valkey" {
			cmd = strings.Fields(*valkey)
		}
		stop := start(cmd[0], append(cmd[1:], "--bind", "127.0.0.1", "--port", strconv.Itoa(srv.port), "--save", "", "--appendonly", "no", "--dir", dir)...)
		defer stop()
		waitFor("tcp", "127.0.0.1:"+strconv.Itoa(srv.port))
		// A replica of it, for the row that waits for one (wait_replicas=1).
		rport := freePort()
		stopReplica := start(cmd[0], append(cmd[1:], "--bind", "127.0.0.1", "--port", strconv.Itoa(rport), "--save", "", "--appendonly", "no",
			"--dir", dir, "--replicaof", "127.0.0.1", strconv.Itoa(srv.port))...)
		defer stopReplica()
		for i := 0; ; i++ {
			out, _ := exec.Command("redis-cli", "-p", strconv.Itoa(srv.port), "info", "replication").Output()
			if strings.Contains(string(out), "state=online") {
				break
			}
			if i == 500 {
				must(fmt.Errorf("the replica of %s never came online", srv.name))
			}
			time.Sleep(20 * time.Millisecond)
		}
		out, _ := exec.Command("redis-cli", "-p", strconv.Itoa(srv.port), "info", "server").Output()
		for _, line := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				servers[i].name += " " + v
			}
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "valkey_version:"); ok {
				servers[i].name = "Valkey " + v
			}
		}
	}
	fmt.Printf("cpu: %s, %d CPUs; %s\n", cpuModel(), runtime.NumCPU(), time.Now().UTC().Format(time.RFC3339))

	count := filepath.Join(dir, "count.php")
	must(os.WriteFile(count, []byte("<?php\nsession_start(['read_and_close' => true]);\necho count($_SESSION);\n"), 0o644))

	// phpredis and the serializers it was built with (Debian 12's needs
	// igbinary and, in some builds, msgpack).
	var redisExt []string
	for _, e := range []string{"igbinary", "msgpack", "redis"} {
		args := []string{"-n"}
		for _, loaded := range redisExt {
			args = append(args, "-d", loaded)
		}
		args = append(args, "-d", "extension="+e, "-r", "echo 1;")
		if out, _ := exec.Command("php", args...).CombinedOutput(); string(out) == "1" {
			redisExt = append(redisExt, "extension="+e)
		}
	}
	phpredis := len(redisExt) > 0 && redisExt[len(redisExt)-1] == "extension=redis"
	if !phpredis {
		fmt.Fprintln(os.Stderr, "php-redis is not installed: its rows are left out")
	}
	type handler struct {
		name    string
		ini     []string
		workers int // php-fpm's pm.max_children; 0: 8
		port    int // the server whose commands are counted; 0: none
	}
	handlers := []handler{
		{"floor: files, 1 worker", []string{"session.save_handler=files", "session.save_path=" + dir}, 1, 0},
		{"ephpm, defaults (shm segment)", []string{"extension=" + extPath, "session.save_handler=ephpm"}, 0, 0},
		{"files (flock)", []string{"session.save_handler=files", "session.save_path=" + dir}, 0, 0},
	}
	for _, srv := range servers {
		url := "redis://127.0.0.1:" + strconv.Itoa(srv.port)
		save := "session.save_path=tcp://127.0.0.1:" + strconv.Itoa(srv.port)
		handlers = append(handlers,
			handler{"ephpm (" + srv.name + "), exclusive", []string{
				"extension=" + extPath, "ephpm.kv_backend=" + url, "session.save_handler=ephpm",
			}, 0, srv.port},
			// The session lock without its lease (issue 29, item 5: what
			// the lease costs, and the release's making of the head's
			// step, which needs it); the URL is quoted, '=' being ini syntax.
			handler{"ephpm (" + srv.name + "), exclusive, lock_lease=0", []string{
				"extension=" + extPath, "ephpm.kv_backend=\"" + url + "?lock_lease=0\"", "session.save_handler=ephpm",
			}, 0, srv.port},
			// Every write waits for the replica (issue 29, item 2).
			handler{"ephpm (" + srv.name + "), exclusive, wait_replicas=1", []string{
				"extension=" + extPath, "ephpm.kv_backend=\"" + url + "?wait_replicas=1\"", "session.save_handler=ephpm",
			}, 0, srv.port},
			handler{"ephpm (" + srv.name + "), exclusive, -base build", []string{
				"extension=" + *base, "ephpm.kv_backend=" + url, "session.save_handler=ephpm",
			}, 0, srv.port},
			handler{"ephpm (" + srv.name + "), optimistic", []string{
				"extension=" + extPath, "ephpm.kv_backend=" + url,
				"session.save_handler=ephpm", "ephpm.session_lock_mode=optimistic",
			}, 0, srv.port},
			handler{"phpredis (" + srv.name + "), locking on", append(slices.Clone(redisExt),
				"session.save_handler=redis", save, "redis.session.locking_enabled=1",
			), 0, srv.port},
			// Polls every 100 µs instead of 20 ms, and long enough for 100 turns.
			handler{"phpredis (" + srv.name + "), locking on, tuned polling", append(slices.Clone(redisExt),
				"session.save_handler=redis", save, "redis.session.locking_enabled=1",
				"redis.session.lock_wait_time=100", "redis.session.lock_retries=1000000",
			), 0, srv.port},
			handler{"phpredis (" + srv.name + "), locking off", append(slices.Clone(redisExt),
				"session.save_handler=redis", save,
			), 0, srv.port},
		)
	}
	for _, field := range strings.Split(*holds, ",") {
		hold, err := strconv.Atoi(strings.TrimSpace(field))
		must(err)
		add := filepath.Join(dir, fmt.Sprintf("add%d.php", hold))
		must(os.WriteFile(add, []byte(fmt.Sprintf("<?php\nsession_start();\n$t = hrtime(true);\nusleep(%d);\n$s = hrtime(true) - $t;\n"+
			"$_SESSION['k' . $_GET['i']] = 1;\n$c = hrtime(true);\nsession_write_close();\n"+
			"echo count($_SESSION), ' ', hrtime(true) - $t, ' ', $s, ' ', $t, ' ', $c;\n", hold)), 0o644))
		serial := time.Duration(*n*hold) * time.Microsecond
		parallel := time.Duration((*n+7)/8*hold) * time.Microsecond
		fmt.Printf("%d concurrent requests, one session, 8 php-fpm workers (the floor: 1), %d µs of work per request "+
			"(serial limit %v, parallel limit %v); Redis commands over %d requests (the count request included; "+
			"commandstats counts the commands scripts run too)\n", *n, hold, serial, parallel, *n+1)
		w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(w, "handler\tkept\twall time\t/serial\t/floor\tslept\theld\tidle\thand-off p50, p90\t/parallel\tp50\tp99\tfailed\tRedis commands per request\t\n")
		var floor time.Duration
		for h, handler := range handlers {
			if strings.HasPrefix(handler.name, "phpredis") && !phpredis || h > 0 && !strings.Contains(handler.name, *only) ||
				strings.HasSuffix(handler.name, "-base build") && *base == "" {
				continue // the floor (row 0) always runs: the other rows are read against it
			}
			workers := handler.workers
			if workers == 0 {
				workers = 8
			}
			pool := fmt.Sprintf("bench%d-%d", os.Getpid(), h)
			sock := filepath.Join(dir, pool+".sock")
			conf := filepath.Join(dir, pool+".conf")
			must(os.WriteFile(conf, []byte(fmt.Sprintf("[global]\nerror_log = %s/%s.log\ndaemonize = no\n[%s]\n"+
				"listen = %s\nlisten.backlog = 1024\npm = static\npm.max_children = %d\n", dir, pool, pool, sock, workers)), 0o600))
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
			run(sock, add, count, 16, fmt.Sprintf("warm%d%d", h, time.Now().UnixNano()))
			if handler.port != 0 {
				redisCommands(handler.port) // reset
			}
			stopMonitor := func() {}
			if *monitor != "" && handler.port != 0 {
				stopMonitor = record(handler.port, fmt.Sprintf("%s.%d", *monitor, h))
			}
			r := run(sock, add, count, *n, fmt.Sprintf("bench%d%d", h, time.Now().UnixNano()))
			stopMonitor()
			stop()
			for _, f := range shm.Files("", segname.FPMPool(pool), os.Geteuid()) {
				os.Remove(f)
			}
			// The count request is one more: its commands are left in.
			cmds := "-"
			if handler.port != 0 {
				if total, per := redisCommands(handler.port); total > 0 {
					cmds = fmt.Sprintf("%.2f (%s)", float64(total)/float64(*n+1), per)
				}
			}
			if h == 0 {
				floor = r.wall
			}
			fmt.Fprintf(w, "%s\t%d/%d\t%v\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t%v\t%s\t%.2fx\t%v\t%v\t%d\t%s\t\n", handler.name, r.kept, *n,
				r.wall.Round(time.Millisecond), float64(r.wall)/float64(serial), float64(r.wall)/float64(floor),
				float64(r.slept)/float64(serial), float64(r.held)/float64(serial), ((r.wall - r.held) / time.Duration(*n)).Round(time.Microsecond),
				fmt.Sprintf("%v, %v", r.handOff.Round(time.Microsecond), r.handOff90.Round(time.Microsecond)),
				float64(r.wall)/float64(parallel),
				r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond), r.failed, cmds)
		}
		w.Flush()
		fmt.Println()
	}
}
