package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ephpm/ephpm/contract"
)

// ErrEvictingServer is wrapped by the error of every call that needs
// exclusion or durability while a master may evict keys, or while whether
// it may cannot be learned (see Store.noEviction). It wraps none of contract's
// errors but contract.ErrNothingDone, so the bridge reports it as E_UNAVAILABLE
// and the message says that the call sent nothing and changed nothing.
var ErrEvictingServer = fmt.Errorf("%w: the Redis server may evict keys", contract.ErrNothingDone)

// evictionCheckEvery is the longest a learned eviction policy is trusted:
// a CONFIG SET on the server is noticed within it.
var evictionCheckEvery = time.Second

// evictionGuard remembers whether the masters may evict keys. A verdict
// holds for the generation it was learned in; the generation moves on
// when the verdict is evictionCheckEvery old, and when a new connection
// opens after one was learned (a restart or a failover may have brought a
// server with another configuration).
type evictionGuard struct {
	allowed bool          // allow_evicting_server=1: the guard is off
	every   time.Duration // evictionCheckEvery when the store was opened
	gen     atomic.Uint64
	last    atomic.Pointer[evictionVerdict]
}

type evictionVerdict struct {
	gen uint64
	err error // nil: no master may evict
}

// reconnected is called for every new connection that carries commands.
func (g *evictionGuard) reconnected() {
	if g.last.Load() != nil {
		g.gen.Add(1)
	}
}

// noEviction is the guard of every member that needs exclusion (SetNX and
// so lockwait.Locker, DelIfEq, ExpireIfEq, SetGuarded) or durability
// (any member on a session key, see durable); each calls it before it sends
// anything. It returns nil while no master may evict a key, or when the
// URL opted out with allow_evicting_server=1; else the error the member
// fails with.
//
// Why: a server with a maxmemory and a maxmemory-policy other than
// noeviction removes keys when it is full, those with a TTL (volatile-*)
// or any (allkeys-*), and tells no client. Every lock and session has a
// TTL. An evicted lock is granted to a second holder while the first still
// works under it, and the first one's release then fails; an evicted
// session is gone.
//
// The policy comes from INFO memory, which managed servers allow where
// they refuse CONFIG, else from CONFIG GET, of every master (one outside a
// Cluster; the current master under Sentinel). It is learned by the first
// call that needs it, again by the first such call after a new connection
// opened, and again once it is evictionCheckEvery old. A master that
// answers neither command is treated as one that may evict: whether a
// lock holds cannot be known there. A master that cannot be reached fails
// the call with that error, and nothing is learned.
func (s *Store) noEviction() error {
	g := s.evict
	if g.allowed {
		return nil
	}
	gen := g.gen.Load()
	if v := g.last.Load(); v != nil && v.gen == gen {
		return v.err
	}
	verdict, err := s.learnEviction()
	if err != nil {
		return err
	}
	g.last.Store(&evictionVerdict{gen: gen, err: verdict})
	time.AfterFunc(g.every, func() { g.gen.CompareAndSwap(gen, gen+1) })
	return verdict
}

// durable is noEviction for a member on key when key is Pinned (see
// Options), which must not be evicted whatever the member.
func (s *Store) durable(key string) error {
	if hasPrefix(key, s.opts.Pinned) {
		return s.noEviction()
	}
	return nil
}

// learnEviction asks every master and returns the guard's verdict, or err
// if a master could not be asked.
func (s *Store) learnEviction() (verdict, err error) {
	cc, ok := s.c.(*redis.ClusterClient)
	if !ok {
		info := func() (string, error) {
			r, err := s.do(nil, "info", "memory")
			return string(r.b), err
		}
		config := func() (map[string]string, error) { return s.c.ConfigGet(ctx, "maxmemory*").Result() }
		return askEviction(s.where, info, config)
	}
	var mu sync.Mutex
	err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		info := func() (string, error) { return c.Info(ctx, "memory").Result() }
		config := func() (map[string]string, error) { return c.ConfigGet(ctx, "maxmemory*").Result() }
		v, err := askEviction(c.Options().Addr, info, config)
		mu.Lock()
		if verdict == nil {
			verdict = v // one master that may evict is enough to refuse
		}
		mu.Unlock()
		return err
	})
	return verdict, err
}

// askEviction learns one master's maxmemory and maxmemory-policy (INFO
// memory; CONFIG GET if INFO is refused or leaves them out) and judges
// them. err is a failure to reach the master; a refusal is a verdict.
func askEviction(where string, info func() (string, error), config func() (map[string]string, error)) (verdict, err error) {
	fields := map[string]string{}
	text, infoErr := info()
	if refused(infoErr) {
		text = ""
	} else if infoErr != nil {
		return nil, infoErr
	}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	limit, policy := fields["maxmemory"], fields["maxmemory_policy"]
	if limit == "" || policy == "" {
		cfg, configErr := config()
		if configErr != nil && !refused(configErr) {
			return nil, configErr
		}
		limit, policy = cfg["maxmemory"], cfg["maxmemory-policy"]
		if limit == "" || policy == "" {
			why := fmt.Sprintf("INFO memory: %v; CONFIG GET maxmemory*: %v", orMissing(infoErr), orMissing(configErr))
			return fmt.Errorf("%w: %s does not say whether it evicts (%s), so locks, sessions and "+
				"compare-and-set calls are refused: allow the user INFO (or CONFIG GET), or add "+
				"allow_evicting_server=1 to ephpm.kv_backend if the server has maxmemory-policy noeviction",
				ErrEvictingServer, where, why), nil
		}
	}
	n, err := strconv.ParseInt(limit, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("redis: maxmemory %q from %s is not a number", limit, where)
	}
	if n == 0 || policy == "noeviction" {
		return nil, nil
	}
	return fmt.Errorf("%w: %s has maxmemory %d and maxmemory-policy %s, so when full it evicts keys, and an "+
		"evicted lock is granted to a second holder and an evicted session is lost; locks, sessions and "+
		"compare-and-set calls are refused. Set maxmemory-policy noeviction (or maxmemory 0) on the server, "+
		"or add allow_evicting_server=1 to ephpm.kv_backend to accept that risk",
		ErrEvictingServer, where, n, policy), nil
}

// refused reports whether err is the server refusing the command itself:
// the user's ACL forbids it (NOPERM) or the server has no such command
// (renamed or disabled, as managed services do). Any other error reply
// (WRONGPASS or NOAUTH from the handshake, LOADING, BUSY, too many
// clients) says nothing about the command and is a failure to reach the
// server, as a network error is.
func refused(err error) bool {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.HasPrefix(msg, "noperm") || strings.Contains(msg, "unknown command") ||
		strings.Contains(msg, "unknown subcommand")
}

func orMissing(err error) string {
	if err == nil {
		return "no maxmemory and maxmemory-policy in the reply"
	}
	return err.Error()
}
