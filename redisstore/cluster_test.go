package redisstore

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/internal/redistest"
)

func clusterURL(nodes []*redistest.Server) string {
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr)
	}
	return "redis+cluster://" + strings.Join(addrs, ",")
}

func TestClusterPassesTheContract(t *testing.T) {
	s := open(t, clusterURL(redistest.StartCluster(t)))
	require.Nil(t, s.direct, "Cluster commands go through go-redis")
	backendtest.Run(t, s, backendtest.ServerMillis)
}

// In Cluster mode go-redis retries a command whose reply was lost (a cut
// connection, a timeout) up to MaxRedirects times, whatever MaxRetries
// says; ephpm's commands must be sent once. Each node announces a proxy
// in front of it, so the client talks through the proxies; the owner's
// proxy drops the SET NX's reply and cuts the connection. A retry would
// find the key set and answer "held" for the caller's own lock.
func TestClusterSendsACommandOnce(t *testing.T) {
	nodes := redistest.StartCluster(t)
	var proxies []*redistest.Proxy
	var addrs []string
	for _, n := range nodes {
		p := redistest.NewProxy(t, n.Addr)
		_, port, _ := strings.Cut(p.Addr, ":")
		admin := redis.NewClient(&redis.Options{Addr: n.Addr})
		require.NoError(t, admin.ConfigSet(ctx, "cluster-announce-port", port).Err())
		admin.Close()
		proxies = append(proxies, p)
		addrs = append(addrs, p.Addr)
	}
	for _, n := range nodes { // every node's map shows the proxies
		admin := redis.NewClient(&redis.Options{Addr: n.Addr})
		require.Eventually(t, func() bool {
			slots, err := admin.ClusterSlots(ctx).Result()
			if err != nil || len(slots) == 0 {
				return false
			}
			for _, sl := range slots {
				if !slices.Contains(addrs, sl.Nodes[0].Addr) {
					return false
				}
			}
			return true
		}, hangCatch, 20*time.Millisecond)
		admin.Close()
	}

	checkEvictionEvery(t, time.Hour)
	s := open(t, "redis+cluster://"+strings.Join(addrs, ","))
	// The client knows the slots and the masters' policies now.
	_, err := s.DelIfEq("lock", []byte("none"))
	require.NoError(t, err)
	owner, err := s.c.(*redis.ClusterClient).MasterForKey(ctx, "lock")
	require.NoError(t, err)
	proxies[slices.Index(addrs, owner.Options().Addr)].DropNextReply()

	out, err := s.SetNX("lock", []byte("tok"), time.Minute)
	require.Error(t, err, "a lost reply is an unknown outcome, got %v", out)
	ok, err := s.DelIfEq("lock", []byte("tok"))
	require.NoError(t, err)
	assert.True(t, ok, "the SET NX had run, once: the caller's token releases it")
}
