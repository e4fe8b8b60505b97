package redistest

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// StartCluster runs three redis-servers as a Redis Cluster of three
// masters (redis-cli --cluster create), each with the extra config lines,
// and waits until it is ready. A node its peers have not heard from for
// cluster-node-timeout is failed, and with no replica the cluster goes
// down: 60 s, so that a node a loaded host did not run for a few seconds
// is not (no test fails a node on purpose).
func StartCluster(t testing.TB, extra ...string) []*Server {
	t.Helper()
	return startCluster(t, 0, extra)
}

// StartClusterWithReplicas is StartCluster with a replica for each master:
// six servers, the masters first (as redis-cli --cluster create assigns
// them, the first three addresses), then their replicas, each synced with
// its master when it returns (a replica whose link is down cannot take a
// CLUSTER FAILOVER over). Its cluster-node-timeout is ClusterFailoverNodeTimeout.
func StartClusterWithReplicas(t testing.TB, extra ...string) []*Server {
	t.Helper()
	return startCluster(t, 1, append([]string{"repl-diskless-sync-delay 0",
		fmt.Sprintf("cluster-node-timeout %d", ClusterFailoverNodeTimeout.Milliseconds())}, extra...))
}

// ClusterFailoverNodeTimeout is the cluster-node-timeout of
// StartClusterWithReplicas. A master votes for a replica of a given master
// at most once in twice this time, so a CLUSTER FAILOVER whose election
// failed (on a loaded host) can only be asked again after that; and a
// master its peers have not heard from for this long is failed over by
// itself, so it is not short.
const ClusterFailoverNodeTimeout = 15 * time.Second

func startCluster(t testing.TB, replicas int, extra []string) []*Server {
	t.Helper()
	var nodes []*Server
	var addrs []string
	for i := 0; i < 3*(1+replicas); i++ {
		s := Start(t, append([]string{"cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 60000"}, extra...)...)
		nodes = append(nodes, s)
		addrs = append(addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	out, err := exec.Command(CLIBinary(), append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(startLimit)
	for _, n := range nodes { // every node must see the whole cluster up
		for {
			out, err := exec.Command(CLIBinary(), "-p", strconv.Itoa(n.Port), "cluster", "info").Output()
			if err == nil && strings.Contains(string(out), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s did not see the cluster ready within %v", n.Addr, startLimit)
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
	for _, n := range nodes[3:] {
		for {
			out, err := exec.Command(CLIBinary(), "-p", strconv.Itoa(n.Port), "info", "replication").Output()
			if err == nil && strings.Contains(string(out), "master_link_status:up") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %s did not sync with its master within %v", n.Addr, startLimit)
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
	return nodes
}
