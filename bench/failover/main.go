// Command failover measures what a Sentinel failover does to locks on
// Redis (issue 29, item 2): a master, a replica and three Sentinels
// (quorum 2) on 127.0.0.1; each round a holder takes a lock (SET NX PX)
// and a fenced grant of a second name through Sentinel, the master is
// SIGKILLed as soon as both are acknowledged, and once every Sentinel names
// the promoted replica a second client, also through Sentinel, asks for the
// same lock and mints a fence of the fenced name. It counts double holders
// (the second got the lock the holder had been granted), fences that did
// not go up, and the failover time; then the same rounds with the harness
// sending WAIT 1 <timeout> to the master after the grant and before the
// kill (rounds where WAIT answered 0 are not counted); then, without WAIT,
// with the replica behind (SIGSTOPped, a large write queued ahead of the
// grants, SIGCONT at the kill). Between rounds the killed master is
// started again as a replica of the new one. Every server is stopped by
// PID at the end, on an error and on SIGINT/SIGTERM, and its directory
// removed. A round prints its line on stderr (FAILOVER_DEBUG=1: also what
// each wait for a ready deployment waits for); the table goes to stdout.
// Figures: docs/measurements.md, 2026-12-05.
//
//	go run ./bench/failover [-rounds 50] [-modes nowait,wait,lag]
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/redisstore"
)

var (
	rounds          = flag.Int("rounds", 50, "rounds per mode")
	downAfter       = flag.Duration("down-after", 500*time.Millisecond, "Sentinels' down-after-milliseconds")
	failoverTimeout = flag.Duration("failover-timeout", time.Second, "Sentinels' failover-timeout")
	waitTimeout     = flag.Duration("wait-timeout", time.Second, "WAIT's timeout in the WAIT mode")
	modesFlag       = flag.String("modes", "nowait,wait,lag", "modes to run, in order: nowait, wait, lag")
	lagBytes        = flag.Int("lag-bytes", 32<<20, "lag mode: the value written ahead of the grants")
	debug           = os.Getenv("FAILOVER_DEBUG") != ""
	lockTTL         = 30 * time.Second
	patience        = 60 * time.Second // a hang catch for each wait
)

// deployment is the master, the replica and the Sentinels; data holds the
// two data servers, whichever is master now.
type deployment struct {
	parent    string
	data      [2]*redistest.Server
	sentinels []*redistest.Server
	sclients  []*redis.SentinelClient
	url       string
	lastKill  time.Time
}

var (
	mu      sync.Mutex
	current *deployment // what cleanup stops
)

// cleanup stops every server this program started, by PID, and removes
// their directories.
func cleanup() {
	mu.Lock()
	defer mu.Unlock()
	d := current
	if d == nil {
		return
	}
	current = nil
	for _, c := range d.sclients {
		c.Close()
	}
	for _, s := range d.sentinels {
		s.Stop()
	}
	for _, s := range d.data {
		if s != nil {
			s.Stop()
		}
	}
	os.RemoveAll(d.parent)
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

	fmt.Printf("CPU: %s\nstart: %s", cpuModel(), uptime())
	fmt.Printf("%s, down-after %v, failover-timeout %v, %d rounds per mode\n\n",
		serverVersion(), *downAfter, *failoverTimeout, *rounds)

	d, err := setUp()
	if err != nil {
		fail("set-up: %v", err)
	}
	var results []result
	for _, m := range strings.Split(*modesFlag, ",") {
		if m != "nowait" && m != "wait" && m != "lag" {
			fail("unknown mode %q", m)
		}
		r := result{mode: m}
		for i := 0; i < *rounds; i++ {
			o, err := d.round(m, i)
			if err != nil {
				fail("%s round %d: %v", m, i, err)
			}
			r.add(o)
			fmt.Fprintf(os.Stderr, "%s %2d: %s\n", m, i, o)
		}
		results = append(results, r)
	}
	cleanup()

	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\trounds\tdouble holders\tfences not up\tfenced grants lost\tfailover median\tmax\tWAIT answered 0")
	for _, r := range results {
		name := map[string]string{"nowait": "no wait", "wait": fmt.Sprintf("WAIT 1 %d", waitTimeout.Milliseconds()),
			"lag": "no wait, replica behind"}[r.mode]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%v\t%v\t%d\n", name, r.counted, r.double, r.backwards,
			r.fencedLost, median(r.failover).Round(time.Millisecond), slices.Max(append(r.failover, 0)).Round(time.Millisecond), r.waitShort)
	}
	tw.Flush()
	fmt.Printf("\nCPU: %s\nend: %s", cpuModel(), uptime())
}

// outcome is one round's.
type outcome struct {
	waited    bool // WAIT mode: WAIT answered 1 (else the round is not counted)
	wait      bool
	double    bool  // the second client was granted the holder's lock
	fence1    int64 // the holder's fence
	fence2    int64 // the second's (0: its grant found the lock held)
	failover  time.Duration
	ready     time.Duration // the wait for the deployment to be ready
	lockLost  bool          // the holder's lock was not on the promoted replica
	fenceLost bool
}

func (o outcome) String() string {
	s := fmt.Sprintf("failover %v, lock lost %v, double holder %v, fenced lost %v, fence %d -> %d",
		o.failover.Round(time.Millisecond), o.lockLost, o.double, o.fenceLost, o.fence1, o.fence2)
	if o.wait {
		s += fmt.Sprintf(", WAIT answered 1: %v", o.waited)
	}
	return s + fmt.Sprintf(" (ready after %v)", o.ready.Round(time.Millisecond))
}

type result struct {
	mode                                              string
	counted, double, backwards, fencedLost, waitShort int
	failover                                          []time.Duration
}

func (r *result) add(o outcome) {
	if o.wait && !o.waited {
		r.waitShort++
		return
	}
	r.counted++
	r.failover = append(r.failover, o.failover)
	if o.double {
		r.double++
	}
	if o.fence2 != 0 && o.fence2 <= o.fence1 {
		r.backwards++
	}
	if o.fenceLost {
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

func setUp() (*deployment, error) {
	parent, err := os.MkdirTemp("", "ephpm-failover")
	if err != nil {
		return nil, err
	}
	d := &deployment{parent: parent}
	mu.Lock()
	current = d
	mu.Unlock()
	// A replica's full sync starts at once, not after 5 s waiting for
	// more replicas (Redis 7's default for diskless syncs).
	noDelay := "repl-diskless-sync-delay 0"
	master, err := redistest.Run(parent, noDelay)
	if err != nil {
		return nil, err
	}
	d.data[0] = master
	replica, err := redistest.Run(parent, noDelay, redistest.ReplicaOf(master))
	if err != nil {
		return nil, err
	}
	d.data[1] = replica
	var addrs []string
	for i := 0; i < 3; i++ {
		s, err := redistest.RunSentinel(parent, master, 2, *downAfter, *failoverTimeout)
		if err != nil {
			return nil, err
		}
		d.sentinels = append(d.sentinels, s)
		d.sclients = append(d.sclients, redis.NewSentinelClient(&redis.Options{Addr: s.Addr, MaxRetries: -1}))
		addrs = append(addrs, s.Addr)
	}
	d.url = "redis+sentinel://" + strings.Join(addrs, ",") + "?master_name=mymaster&dial_timeout=1s&read_timeout=2s&write_timeout=2s"
	return d, nil
}

// masterIndex is the index in d.data of the server every Sentinel names
// as master, once they agree on one of them.
func (d *deployment) masterIndex(ctx context.Context) (int, error) {
	idx := -1
	for _, c := range d.sclients {
		a, err := c.GetMasterAddrByName(ctx, "mymaster").Result()
		if err != nil {
			return -1, err
		}
		port, _ := strconv.Atoi(a[1])
		i := slices.IndexFunc(d.data[:], func(s *redistest.Server) bool { return s.Port == port })
		if i < 0 || (idx >= 0 && i != idx) {
			return -1, fmt.Errorf("the Sentinels do not agree on the master")
		}
		idx = i
	}
	return idx, nil
}

// ready waits until the deployment is as a round starts it: every
// Sentinel names the same master, knows the two other Sentinels and the
// replica, none of them down, and the replica is in sync with the master.
func (d *deployment) ready() (int, error) {
	ctx := context.Background()
	deadline := time.Now().Add(patience)
	var why error
	for time.Now().Before(deadline) {
		why = nil
		mi, err := d.masterIndex(ctx)
		if err != nil {
			why = err
			if debug {
				fmt.Fprintln(os.Stderr, why)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		replica := d.data[1-mi]
		for _, c := range d.sclients {
			m, err := c.Master(ctx, "mymaster").Result()
			if err != nil || m["flags"] != "master" || m["num-other-sentinels"] != "2" {
				why = fmt.Errorf("a Sentinel sees the master as %q with %q other Sentinels (%v)", m["flags"], m["num-other-sentinels"], err)
				break
			}
			rs, err := c.Replicas(ctx, "mymaster").Result()
			ok := false
			for _, r := range rs {
				if r["port"] == strconv.Itoa(replica.Port) && r["flags"] == "slave" {
					ok = true
				}
			}
			if err != nil || !ok {
				why = fmt.Errorf("a Sentinel does not see the replica up: %v %v", rs, err)
				break
			}
		}
		if why == nil {
			why = inSync(ctx, d.data[mi], replica)
		}
		if why == nil {
			return mi, nil
		}
		if debug {
			fmt.Fprintln(os.Stderr, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return -1, fmt.Errorf("not ready within %v: %v", patience, why)
}

// inSync says (nil) whether replica is linked to master and has all of it.
func inSync(ctx context.Context, master, replica *redistest.Server) error {
	mc := redis.NewClient(&redis.Options{Addr: master.Addr, MaxRetries: -1})
	defer mc.Close()
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr, MaxRetries: -1})
	defer rc.Close()
	mi, err := mc.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	ri, err := rc.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	if !strings.Contains(ri, "master_link_status:up") || !strings.Contains(ri, "master_port:"+strconv.Itoa(master.Port)) {
		return errors.New("the replica's link is not up")
	}
	if field(mi, "master_repl_offset") != field(ri, "slave_repl_offset") {
		return errors.New("the replica is behind")
	}
	return nil
}

func field(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

func token() []byte {
	b := make([]byte, 16)
	rand.Read(b)
	return []byte(hex.EncodeToString(b))
}

// round runs one round in mode m ("nowait" or "wait").
func (d *deployment) round(m string, i int) (outcome, error) {
	o := outcome{wait: m == "wait"}
	t0 := time.Now()
	mi, err := d.ready()
	if err != nil {
		return o, err
	}
	o.ready = time.Since(t0)
	// A Sentinel that voted, or led, a failover starts none for the same
	// master within twice failover-timeout of it.
	if w := 2**failoverTimeout + 200*time.Millisecond - time.Since(d.lastKill); w > 0 {
		time.Sleep(w)
	}
	master, replica := d.data[mi], d.data[1-mi]
	ctx := context.Background()
	lock := fmt.Sprintf("failover:%s:%d:lock", m, i)
	fenced := fmt.Sprintf("failover:%s:%d:fenced", m, i)

	holder, err := redisstore.Open(d.url, redisstore.Options{})
	if err != nil {
		return o, err
	}
	defer holder.Close()
	// The first calls learn the eviction policy and load the script: the
	// grants below are one command each.
	if _, err := holder.SetNX("failover:warm", []byte("x"), time.Second); err != nil {
		return o, fmt.Errorf("warm-up: %v", err)
	}
	if _, _, err := backend.SetNXFenced(holder, "failover:warm:fenced", []byte("x"), time.Second); err != nil {
		return o, fmt.Errorf("warm-up: %v", err)
	}
	plain := redis.NewClient(&redis.Options{Addr: master.Addr, MaxRetries: -1, ReadTimeout: *waitTimeout + 2*time.Second})
	defer plain.Close()
	if err := plain.Ping(ctx).Err(); err != nil {
		return o, err
	}
	if m == "lag" {
		// The replica stops reading (SIGSTOP, for less than down-after)
		// and a large write fills the link and the master's buffer for
		// it: the grants queue behind it in the master, as behind any
		// backlog of a replica that fell behind.
		if err := replica.Signal(syscall.SIGSTOP); err != nil {
			return o, err
		}
		defer replica.Signal(syscall.SIGCONT)
		if err := plain.Set(ctx, "failover:ballast", strings.Repeat("b", *lagBytes), 10*time.Second).Err(); err != nil {
			return o, err
		}
	}

	t1, t2 := token(), token()
	var wg sync.WaitGroup
	var out1, outF contract.SetNXOutcome
	var err1, errF error
	wg.Add(2)
	go func() { defer wg.Done(); out1, err1 = holder.SetNX(lock, t1, lockTTL) }()
	go func() { defer wg.Done(); outF, o.fence1, errF = backend.SetNXFenced(holder, fenced, t1, lockTTL) }()
	wg.Wait()
	if err := errors.Join(err1, errF); err != nil || out1 != contract.Inserted || outF != contract.Inserted {
		return o, fmt.Errorf("the holder's grants: %v %v %v", out1, outF, err)
	}
	if o.wait {
		// WAIT waits for the replicas to acknowledge the calling
		// connection's latest write: a write of the harness's own, after
		// the grants, makes that offset cover them.
		cmds, err := plain.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "failover:marker", i, 0)
			p.Do(ctx, "wait", 1, waitTimeout.Milliseconds())
			return nil
		})
		if err != nil {
			return o, fmt.Errorf("WAIT: %v", err)
		}
		n, _ := cmds[1].(*redis.Cmd).Int64()
		o.waited = n >= 1
	}
	start := time.Now()
	master.Stop() // SIGKILL
	d.lastKill = start
	if m == "lag" {
		replica.Signal(syscall.SIGCONT)
	}
	holder.Close()

	// Promotion: every Sentinel names the replica.
	for {
		if ni, err := d.masterIndex(ctx); err == nil && ni != mi {
			break
		}
		if time.Since(start) > patience {
			return o, fmt.Errorf("no failover within %v", patience)
		}
		time.Sleep(10 * time.Millisecond)
	}
	o.failover = time.Since(start)

	// What the promoted replica had of the holder's grants.
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr, MaxRetries: -1})
	defer rc.Close()
	n, err := rc.Exists(ctx, lock).Result()
	if err != nil {
		return o, err
	}
	o.lockLost = n == 0
	n, err = rc.Exists(ctx, fenced).Result()
	if err != nil {
		return o, err
	}
	o.fenceLost = n == 0

	second, err := redisstore.Open(d.url, redisstore.Options{})
	if err != nil {
		return o, err
	}
	defer second.Close()
	var out2, outF2 contract.SetNXOutcome
	for {
		out2, err = second.SetNX(lock, t2, lockTTL)
		if err == nil {
			outF2, o.fence2, err = backend.SetNXFenced(second, fenced, t2, lockTTL)
		}
		if err == nil || time.Since(start) > patience {
			break
		}
		time.Sleep(20 * time.Millisecond) // the new master is not yet writable
	}
	if err != nil {
		return o, fmt.Errorf("the second's grants: %v", err)
	}
	// A try whose reply was lost and was tried again reads Exists: the
	// key's value says who holds it.
	v, err := rc.Get(ctx, lock).Bytes()
	if err != nil {
		return o, err
	}
	o.double = out2 == contract.Inserted || string(v) == string(t2)
	if outF2 != contract.Inserted {
		o.fence2 = 0
	}

	// The killed master comes back as a replica of the new one.
	if err := master.StartAgain("--replicaof", "127.0.0.1", strconv.Itoa(replica.Port)); err != nil {
		return o, err
	}
	return o, nil
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
