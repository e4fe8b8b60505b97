// Command failover measures what a Sentinel failover does to locks on
// Redis (issue 29, item 2): rounds of internal/lockfailover in a
// redistest.Deployment, a master, a replica and three Sentinels (quorum 2)
// on 127.0.0.1. Each round a holder takes a lock (SET NX PX) and a fenced
// grant of a second name through Sentinel, the master is SIGKILLed as soon
// as both are acknowledged, and once every Sentinel names the promoted
// replica a second client, also through Sentinel, asks for the same lock
// and mints a fence of the fenced name. It counts double holders (both
// were granted the lock), fences that did not go up, and the failover
// time. Modes: nowait; wait, the harness sending WAIT 1 <timeout> to the
// master after the grants and before the kill (rounds where WAIT answered
// 0 are not counted); lag, without WAIT, the replica behind (SIGSTOPped, a
// large write queued ahead of the grants, SIGCONT at the kill); cut,
// without WAIT, the replica's link cut before the grants (SIGSTOP and
// CLIENT KILL TYPE replica, SIGCONT at the kill). -holder-params adds
// parameters to the holder's URL in every mode (such as
// "&wait_replicas=1&wait_timeout=1s"); grants that then fail are counted
// as refused. Between rounds the killed master is started again as a
// replica of the new one. Every server is stopped by PID at the end, on an
// error and on SIGINT/SIGTERM, and its directory removed. A round prints
// its line on stderr (FAILOVER_DEBUG=1: also what each wait for a ready
// deployment waits for); the table goes to stdout. Figures:
// docs/measurements.md, 2026-12-05 (taken before the harness set the
// Sentinels' ping period and made the ready deployment's replica receive
// a write: see redistest.SentinelPingPeriod and Deployment.Ready).
//
//	go run ./bench/failover [-rounds 50] [-modes nowait,wait,lag,cut]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ephpm/ephpm/internal/lockfailover"
	"github.com/ephpm/ephpm/internal/redistest"
)

var (
	rounds          = flag.Int("rounds", 50, "rounds per mode")
	downAfter       = flag.Duration("down-after", 500*time.Millisecond, "Sentinels' down-after-milliseconds")
	failoverTimeout = flag.Duration("failover-timeout", time.Second, "Sentinels' failover-timeout")
	waitTimeout     = flag.Duration("wait-timeout", time.Second, "WAIT's timeout in the WAIT mode")
	modesFlag       = flag.String("modes", "nowait,wait,lag", "modes to run, in order: nowait, wait, lag, cut")
	lagBytes        = flag.Int("lag-bytes", 32<<20, "lag mode: the value written ahead of the grants")
	holderParams    = flag.String("holder-params", "", "parameters added to the holder's URL in every mode, such as &wait_replicas=1")
	debug           = os.Getenv("FAILOVER_DEBUG") != ""
)

var (
	mu      sync.Mutex
	parent  string
	current *redistest.Deployment // what cleanup stops
)

// cleanup stops every server this program started, by PID, and removes
// their directories.
func cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if current == nil {
		return
	}
	current.Stop()
	current = nil
	os.RemoveAll(parent)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "failover: "+format+"\n", args...)
	cleanup()
	os.Exit(1)
}

func main() {
	flag.Parse()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "failover: %v: stopping the servers\n", s)
		cleanup()
		os.Exit(130)
	}()
	modes := map[string]lockfailover.Mode{
		"nowait": {HolderParams: *holderParams},
		"wait":   {HolderParams: *holderParams, HarnessWait: *waitTimeout},
		"lag":    {HolderParams: *holderParams, Ballast: *lagBytes},
		"cut":    {HolderParams: *holderParams, Cut: true},
	}
	names := map[string]string{"nowait": "no wait", "wait": fmt.Sprintf("WAIT 1 %d", waitTimeout.Milliseconds()),
		"lag": "no wait, replica behind", "cut": "no wait, replica cut off"}
	for _, m := range strings.Split(*modesFlag, ",") {
		if _, ok := modes[m]; !ok {
			fail("unknown mode %q", m)
		}
	}

	fmt.Printf("CPU: %s\nstart: %s", cpuModel(), uptime())
	fmt.Printf("%s, down-after %v, failover-timeout %v, Sentinel ping period %v, %d rounds per mode\n",
		serverVersion(), *downAfter, *failoverTimeout, redistest.SentinelPingPeriod, *rounds)
	if *holderParams != "" {
		fmt.Printf("holder's URL parameters: %s\n", *holderParams)
	}
	fmt.Println()

	dir, err := os.MkdirTemp("", "ephpm-failover")
	if err != nil {
		fail("%v", err)
	}
	d := &redistest.Deployment{}
	if debug {
		d.Debug = func(why error) { fmt.Fprintln(os.Stderr, why) }
	}
	mu.Lock()
	parent, current = dir, d
	mu.Unlock()
	if err := d.Run(dir, *downAfter, *failoverTimeout); err != nil {
		fail("set-up: %v", err)
	}
	var results []result
	for _, m := range strings.Split(*modesFlag, ",") {
		r := result{mode: m}
		for i := 0; i < *rounds; i++ {
			o, err := lockfailover.Round(d, fmt.Sprintf("failover:%s:%d", m, i), modes[m])
			if err == nil && *holderParams == "" {
				err = errors.Join(o.LockErr, o.FencedErr) // no grant may fail
			}
			if err != nil {
				fail("%s round %d: %v", m, i, err)
			}
			r.add(o, modes[m].HarnessWait > 0)
			fmt.Fprintf(os.Stderr, "%s %2d: %s\n", m, i, o)
		}
		results = append(results, r)
	}
	cleanup()

	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\trounds\tgrants refused\tdouble holders\tfences not up\tfenced grants lost\tfailover median\tmax\tWAIT answered 0")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%v\t%v\t%d\n", names[r.mode], r.counted, r.refused, r.double, r.backwards,
			r.fencedLost, median(r.failover).Round(time.Millisecond), slices.Max(append(r.failover, 0)).Round(time.Millisecond), r.waitShort)
	}
	tw.Flush()
	fmt.Printf("\nCPU: %s\nend: %s", cpuModel(), uptime())
}

type result struct {
	mode                                                       string
	counted, refused, double, backwards, fencedLost, waitShort int
	failover                                                   []time.Duration
}

// add counts o, a round of a mode with the harness's WAIT if waited;
// such a round where WAIT answered 0 is not counted.
func (r *result) add(o lockfailover.Outcome, waited bool) {
	if waited && !o.HarnessWaited {
		r.waitShort++
		return
	}
	r.counted++
	r.failover = append(r.failover, o.Failover)
	if o.LockErr != nil || o.FencedErr != nil {
		r.refused++
	}
	if o.Double() {
		r.double++
	}
	if o.Fence2 != 0 && o.Fence1 != 0 && o.Fence2 <= o.Fence1 {
		r.backwards++
	}
	if o.FencedLost && o.FencedErr == nil {
		r.fencedLost++
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "model name") {
			return line
		}
	}
	return "unknown"
}

func uptime() string {
	out, _ := exec.Command("uptime").Output()
	return string(out)
}

func serverVersion() string {
	out, _ := exec.Command(redistest.ServerBinary(), "--version").Output()
	return strings.TrimSpace(string(out))
}
