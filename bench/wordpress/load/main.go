// Command load is bench/wordpress.sh's load generator: it sends one
// WordPress page to several php-fpm pools through FastCGI, with a fixed
// number of concurrent connections, in rounds that take the pools in turn
// (so that a busy spell of a shared host falls on all of them alike), and
// prints requests per second and what the page's own headers say per
// request (X-WP-Queries, X-WP-Cache-Misses, X-WP-CPU-Us:
// tests/wordpress/figures.php). The CPU time a worker spent on a request is
// the figure a busy shared host disturbs least (the rate counts every
// moment another program held the CPUs; the CPU time only what the request
// itself ran); it leaves out what the servers (MariaDB, Redis) spent.
//
//	go run ./bench/wordpress/load -target 'none=/tmp/x/none.sock:/tmp/x/none' ...
//
// Each target is NAME=SOCKET:DOCROOT. Its row gives the median of the
// rounds' rates and their range, the latency percentiles over every
// measured request, and the means of the headers. The generator's own CPU
// time is printed per round, as a share of the round's wall time: on a
// 2-CPU host whatever it takes is taken from PHP.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ephpm/ephpm/internal/fcgi"
)

type target struct {
	name, sock, root string
	rates            []float64
	lat              []time.Duration
	queries, misses  float64 // sums over measured requests
	cpu              float64 // the workers' CPU microseconds, summed likewise
	measured, failed int
}

type targets []*target

func (t *targets) String() string { return "" }

func (t *targets) Set(v string) error {
	name, rest, ok := strings.Cut(v, "=")
	sock, root, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 {
		return fmt.Errorf("want NAME=SOCKET:DOCROOT, got %q", v)
	}
	*t = append(*t, &target{name: name, sock: sock, root: root})
	return nil
}

// header returns the value of a CGI header, "" if absent.
func header(block, name string) string {
	for _, line := range strings.Split(block, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

type result struct {
	lat                  time.Duration
	queries, misses, cpu float64
	ok                   bool
}

func get(t *target, path string) result {
	params := map[string]string{
		"SCRIPT_FILENAME": t.root + "/index.php", "SCRIPT_NAME": "/index.php", "DOCUMENT_ROOT": t.root,
		"REQUEST_METHOD": "GET", "REQUEST_URI": path, "QUERY_STRING": "",
		"HTTP_HOST": "localhost", "SERVER_NAME": "localhost", "SERVER_PORT": "80",
		"SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1", "GATEWAY_INTERFACE": "CGI/1.1",
	}
	start := time.Now()
	resp, err := fcgi.Do("unix", t.sock, params, 60*time.Second)
	r := result{lat: time.Since(start)}
	if err != nil || strings.HasPrefix(header(resp.Headers, "Status"), "5") || !strings.Contains(string(resp.Body), "</html>") {
		return r
	}
	q, err1 := strconv.ParseFloat(header(resp.Headers, "X-WP-Queries"), 64)
	m, err2 := strconv.ParseFloat(header(resp.Headers, "X-WP-Cache-Misses"), 64)
	u, err3 := strconv.ParseFloat(header(resp.Headers, "X-WP-CPU-Us"), 64)
	r.queries, r.misses, r.cpu, r.ok = q, m, u, err1 == nil && err2 == nil && err3 == nil
	return r
}

// burst sends n requests over c connections at once; the rate and results.
func burst(t *target, path string, n, c int) (float64, []result) {
	results := make([]result, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				results[i] = get(t, path)
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds(), results
}

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	var ts targets
	flag.Var(&ts, "target", "NAME=SOCKET:DOCROOT, one per pool (repeat)")
	n := flag.Int("requests", 1000, "measured requests per target and round")
	c := flag.Int("concurrency", 8, "concurrent connections")
	rounds := flag.Int("rounds", 3, "rounds (each takes every target in turn)")
	warmup := flag.Int("warmup", 100, "unmeasured requests per target first")
	path := flag.String("path", "/", "the page (REQUEST_URI)")
	flag.Parse()
	if len(ts) == 0 {
		fmt.Fprintln(os.Stderr, "load: no -target")
		os.Exit(2)
	}
	for _, t := range ts {
		if _, res := burst(t, *path, *warmup, *c); !slices.ContainsFunc(res, func(r result) bool { return r.ok }) {
			fmt.Fprintf(os.Stderr, "load: %s: no warm-up request succeeded\n", t.name)
			os.Exit(1)
		}
	}
	for r := 1; r <= *rounds; r++ {
		var line []string
		for _, t := range ts {
			c0, w0 := cpu(), time.Now()
			rate, res := burst(t, *path, *n, *c)
			share := float64(cpu()-c0) / float64(time.Since(w0))
			t.rates = append(t.rates, rate)
			for _, x := range res {
				t.lat = append(t.lat, x.lat)
				if x.ok {
					t.measured++
					t.queries += x.queries
					t.misses += x.misses
					t.cpu += x.cpu
				} else {
					t.failed++
				}
			}
			line = append(line, fmt.Sprintf("%s %.1f/s (generator %.0f%% of a CPU)", t.name, rate, 100*share))
		}
		fmt.Printf("round %d: %s\n", r, strings.Join(line, ", "))
	}
	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "object cache\trequests/s (median)\trange\tp50 ms\tp99 ms\tPHP CPU ms/request\tDB queries/request\tcache misses/request\tfailed\t\n")
	for _, t := range ts {
		slices.Sort(t.rates)
		slices.Sort(t.lat)
		per := func(sum, scale float64) string {
			if t.measured == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", sum/scale/float64(t.measured))
		}
		fmt.Fprintf(w, "%s\t%.1f\t%.1f-%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t%d\t\n", t.name, t.rates[len(t.rates)/2],
			t.rates[0], t.rates[len(t.rates)-1],
			float64(t.lat[len(t.lat)/2])/1e6, float64(t.lat[len(t.lat)*99/100])/1e6,
			per(t.cpu, 1000), per(t.queries, 1), per(t.misses, 1), t.failed)
	}
	w.Flush()
}
