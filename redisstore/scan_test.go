package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/sessionkeys"
)

// failPTTL makes the server's answer to PTTL of key an error, in a
// pipeline whose other commands answer: as an ACL refusal of one key does.
type failPTTL struct{ key string }

func (failPTTL) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (failPTTL) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (f failPTTL) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if a := c.Args(); len(a) == 2 && strings.EqualFold(a[0].(string), "pttl") && a[1] == f.key {
				c.SetErr(errors.New("NOPERM No permissions to access a key"))
			}
		}
		return err
	}
}

// walkAll runs a whole walk of s.
func walkAll(s *Store, locksOnly bool) (map[string]backend.KeyInfo, error) {
	seen := map[string]backend.KeyInfo{}
	var cursor uint64
	for {
		p, err := s.Scan("", cursor, 1000, locksOnly)
		if err != nil {
			return seen, err
		}
		for _, k := range p.Keys {
			seen[k.Key] = k
		}
		if cursor = p.Next; cursor == 0 {
			return seen, nil
		}
	}
}

// A key whose PTTL the server refused fails the walk: it is not left out
// as if it were gone since SCAN saw it.
func TestScanFailsOnAKeyWhoseFiguresTheServerRefused(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr+"/0")
	for _, k := range []string{"a", "b", "c"} {
		require.NoError(t, s.Set(k, []byte("v"), 0))
	}
	seen, err := walkAll(s, false)
	require.NoError(t, err)
	require.Len(t, seen, 3)
	s.c.(*redis.Client).AddHook(failPTTL{"b"})
	seen, err = walkAll(s, false)
	require.Error(t, err, "the walk went on without b: %v", seen)
	assert.Contains(t, err.Error(), "PTTL of b: NOPERM")
}

// A read-held name's holds are counted by lock_info's script (on the
// server's clock, in one step): the live ones, and an error when the
// script cannot run, never a count of 0.
func TestScanCountsReadHoldsAsLockInfoDoes(t *testing.T) {
	srv := redistest.Start(t, "user limited on >pw ~* &* +@all -evalsha -eval")
	s := open(t, "redis://"+srv.Addr+"/0")
	for _, tok := range []string{"r1", "r2", "r3"} {
		out, _, err := s.LockAttempt("lock:rw", []byte(tok), contract.LockShared, time.Minute, 0)
		require.NoError(t, err)
		require.Equal(t, contract.Inserted, out)
	}
	out, _, err := s.LockAttempt("lock:short", []byte("r"), contract.LockShared, 50*time.Millisecond, 0)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	_, err = s.SetNX(sessionkeys.LockKey("sid"), []byte("tok"), time.Minute)
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // lock:short's one hold lapses; its record may stay
	locks, err := walkAll(s, true)
	require.NoError(t, err)
	assert.Equal(t, 3, locks["lock:rw"].Readers)
	_, n, err := s.LockInfo("lock:rw")
	require.NoError(t, err)
	assert.Equal(t, n, locks["lock:rw"].Readers, "as LockInfo counts them")
	assert.Zero(t, locks["lock:short"].Readers, "a lapsed hold is not counted")
	assert.Zero(t, locks[sessionkeys.LockKey("sid")].Readers)

	limited, err := Open("redis://limited:pw@"+srv.Addr+"/0", s.opts)
	require.NoError(t, err)
	defer limited.Close()
	_, err = walkAll(limited, true)
	require.Error(t, err, "holds that cannot be counted fail the walk")
	assert.Contains(t, err.Error(), "the read holds of lock:rw")
}

// masterAddrs is the addresses of the masters s's Cluster client knows now.
func masterAddrs(t *testing.T, s *Store) []string {
	var addrs []string
	var mu sync.Mutex
	require.NoError(t, s.c.(*redis.ClusterClient).ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		addrs = append(addrs, c.Options().Addr)
		return nil
	}))
	return addrs
}

// A Cluster walk whose masters change under it (here a master announces
// another address, as a replica at its own address does when a failover
// makes it the master of those slots) fails the next page with
// ErrMastersChanged, an error that says nothing was done, rather than go
// on with the masters' places shifted and skip one in silence; a walk
// begun afterwards sees every key.
func TestClusterScanFailsWhenTheMastersChangeMidWalk(t *testing.T) {
	nodes := redistest.StartCluster(t)
	s := open(t, clusterURL(nodes))
	for i := range 60 {
		require.NoError(t, s.Set(fmt.Sprintf("k%d", i), []byte("v"), 0))
	}
	p, err := s.Scan("", 0, 1, false)
	require.NoError(t, err)
	require.NotZero(t, p.Next, "the walk is under way")

	proxy := redistest.NewProxy(t, nodes[0].Addr)
	_, port, _ := strings.Cut(proxy.Addr, ":")
	admin := redis.NewClient(&redis.Options{Addr: nodes[0].Addr})
	defer admin.Close()
	require.NoError(t, admin.ConfigSet(ctx, "cluster-announce-port", port).Err())
	for _, n := range nodes { // every node's map has the new address: a reload from any gives it
		c := redis.NewClient(&redis.Options{Addr: n.Addr})
		require.Eventually(t, func() bool {
			slots, err := c.ClusterSlots(ctx).Result()
			if err != nil {
				return false
			}
			for _, sl := range slots {
				if sl.Nodes[0].Addr == proxy.Addr {
					return true
				}
			}
			return false
		}, hangCatch, 20*time.Millisecond)
		c.Close()
	}
	require.Eventually(t, func() bool {
		s.c.(*redis.ClusterClient).ReloadState(ctx)
		return slices.Contains(masterAddrs(t, s), proxy.Addr)
	}, hangCatch, 50*time.Millisecond, "the client sees the master at its new address")

	_, err = s.Scan("", p.Next, 1, false)
	require.ErrorIs(t, err, ErrMastersChanged)
	require.ErrorIs(t, err, contract.ErrNothingDone)
	assert.False(t, errors.Is(err, contract.ErrInvalidArgument), "not E_INVALID (a ValueError in PHP): %v", err)
	assert.Contains(t, err.Error(), proxy.Addr, "it names the masters now")

	seen, err := walkAll(s, false)
	require.NoError(t, err)
	assert.Len(t, seen, 60, "a walk from cursor 0 sees every key")
}
