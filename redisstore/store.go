// Package redisstore serves the store's operations from Redis or Valkey
// (standalone, Sentinel or Cluster), so that every php-fpm worker and every
// machine shares one set of locks and sessions.
//
// Each operation is one command or one script, so every decision (is the key
// free? does it hold this token?) is made atomically by the server that owns
// the key; Redis's clock decides expiry, and no machine compares clocks.
// Retries are off: an error is an unknown outcome, never a guess.
//
// Which keys must share a Cluster slot, and which must never be evicted or
// served stale, is the caller's rule, handed to Open (Options): the bridge
// names the session prefixes, so that a session's data and lock (stored as
// session:{sid}, session_lock:{sid}) share a slot and the guarded write can
// be one script.
package redisstore

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ephpm/ephpm/contract"
)

func init() {
	// The client logs dial failures to stderr, which in PHP is the
	// response body of php -S or the error log; failures reach the caller
	// as errors (and the table's last_error) instead.
	redis.SetLogger(quiet{})
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// Store is a Redis-backed store. Its methods are safe for concurrent use.
// Those that need exclusion or durability fail, sending nothing, while a
// master may evict keys (see noEviction).
type Store struct {
	c      redis.UniversalClient
	direct *direct // the single-key commands on a standalone server; nil: through c
	mode   Mode
	hub    *hub
	near   *near // nil: no near cache
	evict  *evictionGuard
	where  string // the server, as messages name it
	opts   Options
	lease  time.Duration // of a Bound lock (lease.go); 0: none
	renew  *renewer
	// waitReplicas and waitTimeout: each write waits for this many
	// replicas, this long at most (replicas.go); 0: no waiting.
	waitReplicas int64
	waitTimeout  time.Duration
	// replicaShortfalls counts the writes whose WAIT came back short.
	replicaShortfalls atomic.Uint64
	// slotMoveWait is how long a command refused with TRYAGAIN (its slot
	// moving between Cluster masters) is sent again: the read timeout.
	slotMoveWait time.Duration

	setNXWins, setNXLosses            atomic.Uint64
	delIfEqMatches, delIfEqMismatches atomic.Uint64

	// scriptsOnly sends every member as its script, where the server has
	// native commands too: for tests of the scripts on any server.
	scriptsOnly bool
}

// Options are what Open takes besides the URL; the zero value is a store
// with no near cache and no key rules.
type Options struct {
	// Near is the near cache (its zero value: none).
	Near NearCache
	// Colocated are the prefixes of keys that go together: a key
	// prefix+rest is stored in Redis as prefix+"{"+rest+"}", so that keys
	// of these prefixes with the same rest share one Cluster slot and one
	// script may touch them all (a write guarded by a lock).
	Colocated []string
	// Pinned are the prefixes of keys that must be exact and kept: never
	// served from the near cache, and their members fail while a master
	// may evict keys (see noEviction), as the other backends pin them.
	Pinned []string
	// LockPrefixes are the prefixes of keys that are locks (the session
	// lock prefix): Scan reports them as locks (it cannot tell others
	// from values).
	LockPrefixes []string
}

// Open parses a backend URL (see parse) and makes a client with opts. It
// does not connect: a server that is down makes each call fail, not Open.
func Open(rawURL string, opts Options) (*Store, error) {
	cfg, err := parse(rawURL)
	if err != nil {
		return nil, err
	}
	n, err := newNear(opts.Near, opts.Pinned)
	if err != nil {
		return nil, err
	}
	g := &evictionGuard{allowed: cfg.allowEvicting, every: evictionCheckEvery}
	cfg.opts.OnConnect = func(context.Context, *redis.Conn) error { g.reconnected(); return nil }
	var c redis.UniversalClient
	switch cfg.mode {
	case Cluster:
		// Each node learns what it has: a Cluster in a rolling upgrade
		// mixes versions.
		co := cfg.opts.Cluster()
		co.NewClient = func(o *redis.Options) *redis.Client {
			h := newNativeHook()
			o.OnConnect = h.onConnect(o.OnConnect)
			return h.attach(redis.NewClient(o))
		}
		c = redis.NewClusterClient(co)
	case Sentinel:
		h := newNativeHook()
		fo := cfg.opts.Failover()
		fo.OnConnect = h.onConnect(fo.OnConnect)
		c = h.attach(redis.NewFailoverClient(fo))
	default:
		h := newNativeHook()
		o := cfg.opts.Simple()
		o.OnConnect = h.onConnect(o.OnConnect)
		c = h.attach(redis.NewClient(o))
	}
	s := &Store{c: c, mode: cfg.mode, hub: newHub(redis.NewUniversalClient(&cfg.pubsubOpts)), near: n, evict: g, opts: opts,
		lease: cfg.lease, waitReplicas: cfg.waitReplicas, waitTimeout: cfg.waitTimeout}
	// A member that waits for replicas goes as its script: one command
	// for WAIT to follow (replicas.go).
	s.scriptsOnly = s.waitReplicas > 0
	s.slotMoveWait = cfg.opts.ReadTimeout
	if s.slotMoveWait <= 0 {
		s.slotMoveWait = defaultReadTimeout
	}
	s.renew = newRenewer(s)
	switch {
	case cfg.mode == Sentinel:
		s.where = "the master " + cfg.opts.MasterName
	case len(cfg.opts.Addrs) > 0:
		s.where = cfg.opts.Addrs[0]
	}
	if one, ok := c.(*redis.Client); ok && cfg.mode == Standalone {
		s.direct = newDirect(one.Options(), cfg.dial)
		s.direct.connected = g.reconnected
		s.where = s.direct.addr
	}
	return s, nil
}

// Close closes the client and its connections. The leases of the locks
// it holds are no longer renewed: those locks lapse within a lease.
func (s *Store) Close() error {
	s.renew.close()
	s.hub.close()
	s.near.close()
	if s.direct != nil {
		s.direct.close()
	}
	return s.c.Close()
}

// Name is the deployment kind, as stats report it.
func (s *Store) Name() string { return string(s.mode) }

// redisKey maps a store key to its Redis key: a key of a Colocated prefix
// gets the rest of its name as a hash tag (see Options).
func (s *Store) redisKey(key string) string {
	for _, prefix := range s.opts.Colocated {
		if rest, ok := strings.CutPrefix(key, prefix); ok {
			return prefix + "{" + rest + "}"
		}
	}
	return key
}

// hasPrefix says whether key starts with one of prefixes.
func hasPrefix(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// GetInto copies the value into dst if it fits; n is its length. A key
// under a near-cache prefix may come from this process's cache.
func (s *Store) GetInto(key string, dst []byte) (int, bool, error) {
	if err := s.durable(key); err != nil {
		return 0, false, err
	}
	if v, cached := s.near.get(key); cached {
		if len(v) <= len(dst) {
			copy(dst, v)
		}
		return len(v), true, nil
	}
	cacheable := s.near.eligible(key)
	var fetchedAt time.Time
	if cacheable {
		fetchedAt = time.Now()
	}
	r, err := s.do(dst, "get", s.redisKey(key))
	if err != nil {
		return 0, false, classify(err)
	}
	if r.null {
		return 0, false, nil
	}
	if cacheable {
		s.near.put(key, bytes.Clone(r.b), fetchedAt) // r.b may be dst, which the caller reuses
	}
	return len(r.b), true, nil
}

// Set is SET (with PX when ttl > 0), which also clears an old TTL.
func (s *Store) Set(key string, value []byte, ttl time.Duration) error {
	if err := s.durable(key); err != nil {
		return err
	}
	defer s.near.forget(key)
	var err error
	if ttl > 0 {
		_, err = s.do(nil, "set", s.redisKey(key), value, "px", ms(ttl))
	} else {
		_, err = s.do(nil, "set", s.redisKey(key), value)
	}
	return classify(err)
}

// SetNX is SET NX PX: the check, the insert and the TTL in one command.
func (s *Store) SetNX(key string, value []byte, ttl time.Duration) (contract.SetNXOutcome, error) {
	if err := s.noEviction(); err != nil {
		return 0, err
	}
	defer s.near.forget(key)
	var r reply
	var err error
	if ttl > 0 {
		r, err = s.do(nil, "set", s.redisKey(key), value, "px", ms(ttl), "nx")
	} else {
		r, err = s.do(nil, "set", s.redisKey(key), value, "nx")
	}
	if err != nil {
		return 0, classify(err)
	}
	if r.null {
		s.setNXLosses.Add(1)
		return contract.Exists, nil
	}
	s.setNXWins.Add(1)
	return contract.Inserted, nil
}

// Exists is EXISTS.
func (s *Store) Exists(key string) (bool, error) {
	if err := s.durable(key); err != nil {
		return false, err
	}
	r, err := s.do(nil, "exists", s.redisKey(key))
	return r.n == 1, classify(err)
}

// Flush is FLUSHDB: every key of the configured database (of every master
// in a Cluster) goes.
func (s *Store) Flush() error {
	defer s.near.clear()
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		return classify(cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return c.FlushDB(ctx).Err()
		}))
	}
	return classify(s.c.FlushDB(ctx).Err())
}
