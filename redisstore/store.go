// Package redisstore serves the store's operations from Redis or Valkey
// (standalone, Sentinel or Cluster), so that every php-fpm worker and every
// machine shares one set of locks and sessions.
//
// Each operation is one command or one script, so every decision (is the key
// free? does it hold this token?) is made atomically by the server that owns
// the key; Redis's clock decides expiry, and no machine compares clocks.
// Retries are off: an error is an unknown outcome, never a guess.
//
// Session keys are stored with their session id as a hash tag
// (session:{sid}, session_lock:{sid}) so a session's data and lock share a
// Cluster slot and the guarded write can be one script.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ephpm/ephpm/kv"
	"github.com/ephpm/ephpm/session"
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
type Store struct {
	c    redis.UniversalClient
	mode Mode
	hub  *hub
	near *near // nil: no near cache

	setNXWins, setNXLosses            atomic.Uint64
	delIfEqMatches, delIfEqMismatches atomic.Uint64
}

// Open parses a backend URL (see parse) and makes a client, with an
// optional near cache. It does not connect: a server that is down makes
// each call fail, not Open.
func Open(rawURL string, nc ...NearCache) (*Store, error) {
	o, mode, err := parse(rawURL)
	if err != nil {
		return nil, err
	}
	var n *near
	if len(nc) > 0 {
		if n, err = newNear(nc[0]); err != nil {
			return nil, err
		}
	}
	c := redis.NewUniversalClient(&o)
	return &Store{c: c, mode: mode, hub: newHub(c), near: n}, nil
}

// Close closes the client and its connections.
func (s *Store) Close() error {
	s.hub.close()
	s.near.close()
	return s.c.Close()
}

// Name is the deployment kind, as stats report it.
func (s *Store) Name() string { return string(s.mode) }

// redisKey maps a store key to its Redis key: session keys get their id as
// a hash tag so that data and lock of one session share a Cluster slot.
func redisKey(key string) string {
	for _, prefix := range []string{session.DataPrefix, session.LockPrefix} {
		if sid, ok := strings.CutPrefix(key, prefix); ok {
			return prefix + "{" + sid + "}"
		}
	}
	return key
}

// releaseChannel is where a release of key is announced to waiters.
func releaseChannel(rkey string) string { return "ephpm:released:" + rkey }

func ms(d time.Duration) int64 { return int64(d / time.Millisecond) }

var ctx = context.Background()

// classify turns a Redis error into the store's errors: a refusal whose
// outcome is known (nothing changed) or, for everything else, the error
// itself, which the bridge reports as an unknown outcome.
func classify(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "OOM "):
		return fmt.Errorf("%w: %s", kv.ErrNoMemory, msg)
	case strings.Contains(msg, "overflow"):
		return fmt.Errorf("%w: %s", kv.ErrOverflow, msg)
	case strings.Contains(msg, "not an integer"):
		return fmt.Errorf("%w: %s", kv.ErrNotInteger, msg)
	}
	return err
}

// GetInto copies the value into dst if it fits; n is its length. A key
// under a near-cache prefix may come from this process's cache.
func (s *Store) GetInto(key string, dst []byte) (int, bool, error) {
	v, cached := s.near.get(key)
	if !cached {
		fetchedAt := time.Now()
		var err error
		v, err = s.c.Get(ctx, redisKey(key)).Bytes()
		if errors.Is(err, redis.Nil) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, classify(err)
		}
		s.near.put(key, v, fetchedAt)
	}
	if len(v) <= len(dst) {
		copy(dst, v)
	}
	return len(v), true, nil
}

// Set is SET (with PX when ttl > 0), which also clears an old TTL.
func (s *Store) Set(key string, value []byte, ttl time.Duration) error {
	defer s.near.forget(key)
	return classify(s.c.Set(ctx, redisKey(key), value, ttl).Err())
}

// SetNX is SET NX PX: the check, the insert and the TTL in one command.
func (s *Store) SetNX(key string, value []byte, ttl time.Duration) (kv.SetNXOutcome, error) {
	defer s.near.forget(key)
	ok, err := s.c.SetNX(ctx, redisKey(key), value, ttl).Result()
	if err != nil {
		return 0, classify(err)
	}
	if !ok {
		s.setNXLosses.Add(1)
		return kv.Exists, nil
	}
	s.setNXWins.Add(1)
	return kv.Inserted, nil
}

var delScript = redis.NewScript(`
local n = redis.call('del', KEYS[1])
if n > 0 then redis.call('publish', ARGV[1], '') end
return n`)

// Del removes key and announces it to waiters.
func (s *Store) Del(key string) (bool, error) {
	defer s.near.forget(key)
	rk := redisKey(key)
	n, err := delScript.Run(ctx, s.c, []string{rk}, releaseChannel(rk)).Int()
	return n > 0, classify(err)
}

var delIfEqScript = redis.NewScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('publish', ARGV[2], '')
  return 1
end
return 0`)

// DelIfEq deletes key only while it holds token, in one script on the
// server that owns the key. An expired key reads as absent there.
func (s *Store) DelIfEq(key string, token []byte) (bool, error) {
	defer s.near.forget(key)
	rk := redisKey(key)
	n, err := delIfEqScript.Run(ctx, s.c, []string{rk}, token, releaseChannel(rk)).Int()
	if err != nil {
		return false, classify(err)
	}
	if n == 1 {
		s.delIfEqMatches.Add(1)
	} else {
		s.delIfEqMismatches.Add(1)
	}
	return n == 1, nil
}

var setGuardedScript = redis.NewScript(`
if redis.call('get', KEYS[2]) ~= ARGV[2] then return 0 end
if ARGV[3] == '0' then
  redis.call('set', KEYS[1], ARGV[1])
else
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[3])
end
return 1`)

// SetGuarded writes key only while guardKey holds guardToken: one script,
// so both keys must live on one server (sessions do: see redisKey).
func (s *Store) SetGuarded(key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	defer s.near.forget(key)
	n, err := setGuardedScript.Run(ctx, s.c, []string{redisKey(key), redisKey(guardKey)},
		value, guardToken, ms(ttl)).Int()
	return n == 1, classify(err)
}

var expireScript = redis.NewScript(`
if ARGV[2] ~= '' and redis.call('get', KEYS[1]) ~= ARGV[2] then return 0 end
if redis.call('exists', KEYS[1]) == 0 then return 0 end
if ARGV[1] == '0' then redis.call('persist', KEYS[1]) else redis.call('pexpire', KEYS[1], ARGV[1]) end
return 1`)

// Expire gives a live key a new TTL (0: none).
func (s *Store) Expire(key string, ttl time.Duration) (bool, error) {
	n, err := expireScript.Run(ctx, s.c, []string{redisKey(key)}, ms(ttl), "").Int()
	return n == 1, classify(err)
}

// ExpireIfEq is Expire only while key holds token. An empty token cannot
// be told from "no token" by the script, so it is compared here first.
func (s *Store) ExpireIfEq(key string, token []byte, ttl time.Duration) (bool, error) {
	if len(token) == 0 {
		return false, nil // a lock token is never empty
	}
	n, err := expireScript.Run(ctx, s.c, []string{redisKey(key)}, ms(ttl), token).Int()
	return n == 1, classify(err)
}

// Exists is EXISTS.
func (s *Store) Exists(key string) (bool, error) {
	n, err := s.c.Exists(ctx, redisKey(key)).Result()
	return n == 1, classify(err)
}

// PTTL is PTTL: -1 for no expiry; found is false for no key.
func (s *Store) PTTL(key string) (time.Duration, bool, error) {
	n, err := s.c.Do(ctx, "pttl", redisKey(key)).Int64()
	if err != nil {
		return 0, false, classify(err)
	}
	switch {
	case n == -2:
		return 0, false, nil
	case n == -1:
		return -1, true, nil
	}
	return time.Duration(n) * time.Millisecond, true, nil
}

var incrScript = redis.NewScript(`
local existed = redis.call('exists', KEYS[1])
local v = redis.call('incrby', KEYS[1], ARGV[1])
if existed == 0 and ARGV[2] ~= '0' then redis.call('pexpire', KEYS[1], ARGV[2]) end
return v`)

// IncrBy is INCRBY, with the TTL applied only when it created the key
// (a script then: the check and the increment must be one step). Without
// a TTL it is the plain command, which fails the same way.
func (s *Store) IncrBy(key string, delta int64, ttlOnCreate time.Duration) (int64, error) {
	defer s.near.forget(key)
	if ttlOnCreate == 0 {
		n, err := s.c.IncrBy(ctx, redisKey(key), delta).Result()
		return n, classify(err)
	}
	n, err := incrScript.Run(ctx, s.c, []string{redisKey(key)}, delta, ms(ttlOnCreate)).Int64()
	return n, classify(err)
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

// Stats combines the server's figures (INFO; in a Cluster, of the node
// that answers) with this process's lock outcomes.
func (s *Store) Stats() (kv.Stats, error) {
	info, err := s.c.Info(ctx, "server", "memory", "stats").Result()
	if err != nil {
		return kv.Stats{}, classify(err)
	}
	keys, err := s.c.DBSize(ctx).Result()
	if err != nil {
		return kv.Stats{}, classify(err)
	}
	field := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			field[k] = v
		}
	}
	num := func(k string) int64 { n, _ := strconv.ParseInt(field[k], 10, 64); return n }
	st := kv.Stats{
		InstanceID:        field["run_id"],
		Keys:              keys,
		BytesUsed:         num("used_memory"),
		MemoryLimit:       num("maxmemory"),
		Hits:              uint64(num("keyspace_hits")),
		Misses:            uint64(num("keyspace_misses")),
		Evictions:         uint64(num("evicted_keys")),
		Expirations:       uint64(num("expired_keys")),
		SetNXWins:         s.setNXWins.Load(),
		SetNXLosses:       s.setNXLosses.Load(),
		DelIfEqMatches:    s.delIfEqMatches.Load(),
		DelIfEqMismatches: s.delIfEqMismatches.Load(),
		Eviction:          field["maxmemory_policy"],
	}
	if st.Eviction == "" {
		// Older servers leave the policy out of INFO.
		if cfg, err := s.c.ConfigGet(ctx, "maxmemory-policy").Result(); err == nil {
			st.Eviction = cfg["maxmemory-policy"]
		}
	}
	return st, nil
}
