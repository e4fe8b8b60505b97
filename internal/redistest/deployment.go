package redistest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Deployment is a master and its replica, and three Sentinels (quorum 2)
// that monitor them as "mymaster" and fail the master over to the replica:
// what bench/failover and redisstore's failover test kill masters in.
// Killing the master (Stop), waiting for the promotion (AwaitFailover) and
// starting the killed server again as a replica of the new master (Rejoin)
// swaps the two roles; Ready waits until the deployment is whole again.
type Deployment struct {
	// Data are the two data servers, whichever is the master now (see
	// MasterIndex).
	Data      [2]*Server
	Sentinels []*Server
	// URL reaches the master through the three Sentinels.
	URL string
	// Debug, if set, is told what each of Ready's polls is waiting for.
	Debug func(why error)

	clients []*redis.SentinelClient
}

// SentinelPingPeriod is set on each Sentinel (SENTINEL DEBUG ping-period;
// 1 s by default) by Run. A Sentinel reconnects to an instance at most once
// a ping period, and when it switches to the promoted replica it counts
// that server's reply time from the switch: with a down-after shorter
// than the period (as here, to keep rounds short), the new master's first
// reply can come after down-after, and every Sentinel finds the healthy
// new master down and fails it over again, to the killed master restarted
// as its replica; the demoted master then stays a master, without a
// replica, until a Sentinel converts it 10-15 s later (the rounds of
// bench/failover that waited that long, which docs/measurements.md put
// down to the rejoining replica's full sync). 300 ms keeps the
// reconnection under the 500 ms down-after the harness uses, and a
// replica's INFO (which Sentinel asks for every second during a failover)
// valid: a Sentinel promotes only a replica it heard from within 5 ping
// periods.
const SentinelPingPeriod = 300 * time.Millisecond

// StartDeployment runs a Deployment for test t (see Run) and stops it when
// t ends; it skips t if redis-server is not installed.
func StartDeployment(t testing.TB, downAfter, failoverTimeout time.Duration) *Deployment {
	t.Helper()
	if _, err := exec.LookPath(ServerBinary()); err != nil {
		t.Skip(ServerBinary() + " not installed")
	}
	// The directory first: its removal, a cleanup, then runs after Stop
	// (cleanups run last first), never while a server writes in it.
	parent := t.TempDir()
	d := &Deployment{}
	t.Cleanup(d.Stop)
	if err := d.Run(parent, downAfter, failoverTimeout); err != nil {
		t.Fatal(err)
	}
	return d
}

// Run starts the servers, in new directories under parent: the master,
// its replica, and the Sentinels, each of which finds the master down
// after downAfter without a valid reply and abandons a failover that has
// not ended after failoverTimeout. On an error what it started is left
// for Stop.
func (d *Deployment) Run(parent string, downAfter, failoverTimeout time.Duration) error {
	// A replica's full sync starts at once, not after 5 s waiting for
	// more replicas (Redis 7's default for diskless syncs).
	noDelay := "repl-diskless-sync-delay 0"
	master, err := Run(parent, noDelay)
	if err != nil {
		return err
	}
	d.Data[0] = master
	replica, err := Run(parent, noDelay, ReplicaOf(master))
	if err != nil {
		return err
	}
	d.Data[1] = replica
	var addrs []string
	for i := 0; i < 3; i++ {
		s, err := RunSentinel(parent, master, 2, downAfter, failoverTimeout)
		if err != nil {
			return err
		}
		d.Sentinels = append(d.Sentinels, s)
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		d.clients = append(d.clients, c)
		addrs = append(addrs, s.Addr)
		// Servers without SENTINEL DEBUG (before Redis 7) keep the 1 s
		// period, and the second failover above slows their rounds.
		c.Process(context.Background(), redis.NewCmd(context.Background(),
			"sentinel", "debug", "ping-period", SentinelPingPeriod.Milliseconds()))
	}
	d.URL = "redis+sentinel://" + strings.Join(addrs, ",") +
		"?master_name=mymaster&dial_timeout=1s&read_timeout=2s&write_timeout=2s"
	return nil
}

// Stop stops every server by PID.
func (d *Deployment) Stop() {
	for _, c := range d.clients {
		c.Close()
	}
	d.clients = nil
	for _, s := range d.Sentinels {
		s.Stop()
	}
	for _, s := range d.Data {
		if s != nil {
			s.Stop()
		}
	}
}

// MasterIndex is the index in Data of the server every Sentinel names as
// the master, once they agree on one of them.
func (d *Deployment) MasterIndex(ctx context.Context) (int, error) {
	idx := -1
	for _, c := range d.clients {
		a, err := c.GetMasterAddrByName(ctx, "mymaster").Result()
		if err != nil {
			return -1, err
		}
		port, _ := strconv.Atoi(a[1])
		i := slices.IndexFunc(d.Data[:], func(s *Server) bool { return s.Port == port })
		if i < 0 || (idx >= 0 && i != idx) {
			return -1, errors.New("the Sentinels do not agree on the master")
		}
		idx = i
	}
	return idx, nil
}

// Ready waits, polling until patience has passed (a hang catch), until
// the deployment is whole: every Sentinel names the same master, sees it
// up with no failover in progress, knows the two other Sentinels and sees
// the replica up, and the replica is linked to the master and receives its
// writes (see inSync). It returns the master's index in Data.
func (d *Deployment) Ready(patience time.Duration) (int, error) {
	ctx := context.Background()
	deadline := time.Now().Add(patience)
	var why error
	for time.Now().Before(deadline) {
		var mi int
		mi, why = d.MasterIndex(ctx)
		if why == nil {
			why = d.whole(ctx, mi)
		}
		if why == nil {
			return mi, nil
		}
		if d.Debug != nil {
			d.Debug(why)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return -1, fmt.Errorf("not ready within %v: %v", patience, why)
}

// whole is Ready's condition for master index mi (nil: met).
func (d *Deployment) whole(ctx context.Context, mi int) error {
	replica := d.Data[1-mi]
	for _, c := range d.clients {
		m, err := c.Master(ctx, "mymaster").Result()
		if err != nil || m["flags"] != "master" || m["num-other-sentinels"] != "2" {
			return fmt.Errorf("a Sentinel sees the master as %q with %q other Sentinels (%v)", m["flags"], m["num-other-sentinels"], err)
		}
		rs, err := c.Replicas(ctx, "mymaster").Result()
		ok := false
		for _, r := range rs {
			if r["port"] == strconv.Itoa(replica.Port) && r["flags"] == "slave" {
				ok = true
			}
		}
		if err != nil || !ok {
			return fmt.Errorf("a Sentinel does not see the replica up: %v %v", rs, err)
		}
	}
	return InSync(ctx, d.Data[mi], replica)
}

// InSync says (nil) whether replica is linked to master and has all of
// it, including a write made now. The write tells a replica that receives
// what the master writes from one that only has what it was sent: after a
// full sync the master streams its writes to the replica only once the
// replica acknowledged the sync while the master counted it online, and
// the acknowledgement the replica sends as soon as it has loaded the data
// can come first (the master notices the end of the transfer, its child's
// exit, on its next cron, every 100 ms); then the stream starts on the
// replica's next acknowledgement, up to a second later, and until then
// the offsets are equal while every write is held back.
func InSync(ctx context.Context, master, replica *Server) error {
	mc := redis.NewClient(&redis.Options{Addr: master.Addr, MaxRetries: -1})
	defer mc.Close()
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr, MaxRetries: -1})
	defer rc.Close()
	if err := mc.Incr(ctx, "redistest:ready").Err(); err != nil {
		return err
	}
	mi, err := mc.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	ri, err := rc.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	if InfoField(ri, "master_link_status") != "up" || InfoField(ri, "master_port") != strconv.Itoa(master.Port) {
		return errors.New("the replica's link is not up")
	}
	if InfoField(mi, "master_repl_offset") != InfoField(ri, "slave_repl_offset") {
		return errors.New("the replica is behind")
	}
	return nil
}

// InfoField is the value of field name in an INFO reply ("" if absent).
func InfoField(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// AwaitFailover waits, polling every 10 ms until patience has passed (a
// hang catch), until every Sentinel names Data[1-from] as the master.
func (d *Deployment) AwaitFailover(from int, patience time.Duration) error {
	ctx := context.Background()
	deadline := time.Now().Add(patience)
	for {
		if i, err := d.MasterIndex(ctx); err == nil && i != from {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no failover within %v", patience)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Rejoin starts the stopped Data[i] again as a replica of the other data
// server (without persistence it comes back empty and syncs in full).
func (d *Deployment) Rejoin(i int) error {
	return d.Data[i].StartAgain("--replicaof", "127.0.0.1", strconv.Itoa(d.Data[1-i].Port))
}

// CutReplica makes the replica of Data[mi] miss, for certain, whatever
// the master writes next: it stops the replica (SIGSTOP), so that it
// cannot reconnect, and has the master close its link to it (CLIENT KILL
// TYPE replica), so that nothing more is sent on it; the master goes on
// taking writes, as a master partitioned from its replica does. resume
// (SIGCONT) lets the replica run again: it reads what was sent before the
// cut, finds the link closed, and tries to reconnect.
func (d *Deployment) CutReplica(mi int) (resume func() error, err error) {
	master, replica := d.Data[mi], d.Data[1-mi]
	if err := replica.Signal(syscall.SIGSTOP); err != nil {
		return nil, err
	}
	resume = func() error { return replica.Signal(syscall.SIGCONT) }
	ctx := context.Background()
	mc := redis.NewClient(&redis.Options{Addr: master.Addr, MaxRetries: -1})
	defer mc.Close()
	n, err := mc.Do(ctx, "client", "kill", "type", "replica").Int64()
	if err == nil && n < 1 {
		err = errors.New("CLIENT KILL TYPE replica: the master had no replica")
	}
	var info string
	if err == nil {
		info, err = mc.Info(ctx, "replication").Result()
	}
	if err == nil && InfoField(info, "connected_slaves") != "0" {
		err = fmt.Errorf("the master still has %s replicas after CLIENT KILL", InfoField(info, "connected_slaves"))
	}
	if err != nil {
		resume()
		return nil, err
	}
	return resume, nil
}
