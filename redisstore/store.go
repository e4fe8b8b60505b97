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
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ephpm/ephpm/kv"
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
	s := &Store{c: c, mode: cfg.mode, hub: newHub(redis.NewUniversalClient(&cfg.pubsubOpts)), near: n, evict: g, opts: opts}
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

// Close closes the client and its connections.
func (s *Store) Close() error {
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

// releaseChannel is where a release of key is announced to waiters.
// Every waiter listens there, for the messages that name nobody ("") or
// everyone (wakeEveryone). A message naming the head of the key's line
// goes instead to that waiter's own channel (headChannel) and to the one
// Wait's waiters listen on besides (namedChannel), so that it wakes the
// head and each process's oldest Wait, not every waiter in line: on a
// standalone server each waits on a connection of its own (turnwait.go),
// and one channel for all of them woke every waiting thread of every
// process at each hand-over, of whom one went on. tellHeadLua publishes
// so. Both are the release channel and a NUL byte (channelSep) after it,
// so that a user whose ACL allows "&ephpm:released:*" reaches them; only
// a key that itself ends in NUL (and a waiter's id) names another key's
// channel, and a release of it wakes a waiter for nothing, who looks and
// waits again.
func releaseChannel(rkey string) string { return "ephpm:released:" + rkey }

// channelSep ends a release channel in the names of the channels beside
// it: no key of ephpm's own (sessions, locks) holds a NUL byte.
const channelSep = "\x00"

// headChannel is where a release names waiter id, the head of the line
// of the key whose release channel is ch.
func headChannel(ch, id string) string { return ch + channelSep + id }

// namedChannel is where Wait's waiters on the key whose release channel
// is ch hear the releases that name a head.
func namedChannel(ch string) string { return ch + channelSep }

// ms is a TTL in whole milliseconds, as PX and PEXPIRE take it: 0 for
// none, and at least 1 for any positive TTL (0 would mean none, or be
// refused).
func ms(d time.Duration) int64 {
	if d > 0 {
		return max(int64(d/time.Millisecond), 1)
	}
	return int64(d / time.Millisecond)
}

var ctx = context.Background()

// do runs one command whose arguments are strings, []byte or int64, and
// whose reply is a status, an integer or a bulk string (copied into dst
// when it fits: see reply). A server's refusal is an error carrying its
// text; any other error is an unknown outcome.
func (s *Store) do(dst []byte, args ...any) (reply, error) {
	if s.direct != nil {
		return s.direct.do(dst, args)
	}
	cmd := redis.NewCmd(ctx, args...)
	s.c.Process(ctx, sendOnce{cmd})
	return goRedisReply(dst, cmd)
}

// goRedisReply is cmd's reply as do returns it.
func goRedisReply(dst []byte, cmd *redis.Cmd) (reply, error) {
	v, err := cmd.Result()
	switch {
	case errors.Is(err, redis.Nil):
		return reply{kind: '$', null: true}, nil
	case err != nil:
		return reply{}, err
	}
	switch v := v.(type) {
	case int64:
		return reply{kind: ':', n: v}, nil
	case string: // a status or a bulk string: go-redis does not tell them apart
		if len(v) <= len(dst) {
			return reply{kind: '$', b: dst[:copy(dst, v)]}, nil
		}
		return reply{kind: '$', b: []byte(v)}, nil
	}
	return reply{}, errProtocol
}

// sendOnce marks a command go-redis must not send again after an error.
// MaxRetries is off (see parse), but a ClusterClient also retries a
// command whose reply was lost (a cut connection, a timeout) up to
// MaxRedirects times, and MaxRedirects also follows MOVED and ASK, which
// must stay; a NoRetry command is never retried
// (TestClusterSendsACommandOnce).
type sendOnce struct{ *redis.Cmd }

func (sendOnce) NoRetry() bool { return true }

// script is a Lua script, run by its SHA1 and sent whole only when the
// server does not have it yet.
type script struct{ src, sha string }

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

// run is EVALSHA, then EVAL if the server answers NOSCRIPT (it ran
// nothing). The script's reply must be an integer.
func (s *Store) run(sc *script, keys []string, argv ...any) (int64, error) {
	return s.runNative(nil, sc, keys, argv...)
}

// runNative is call's native command on a server that has it (see
// nativeCall), else run. On the direct path the store picks the form for
// the connection it takes; through go-redis the script goes out as a
// nativeCmd and the hook of the client it reaches (in a Cluster, the
// owner's node) picks it.
func (s *Store) runNative(call *nativeCall, sc *script, keys []string, argv ...any) (int64, error) {
	if s.scriptsOnly {
		call = nil
	}
	if call != nil && s.direct != nil {
		r, err := s.direct.doNative(call)
		if err != errScript {
			if err != nil {
				return 0, classify(err)
			}
			n, err := nativeReply(r)
			return n, err
		}
	}
	var r reply
	var err error
	if call != nil && s.direct == nil {
		args := evalArgs(sc, keys, argv)
		cmd := redis.NewCmd(ctx, args...)
		s.c.Process(ctx, nativeCmd{cmd, call})
		r, err = goRedisReply(nil, cmd)
		if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			args[0], args[1] = "eval", sc.src
			r, err = s.do(nil, args...)
		}
		err = classify(err)
	} else {
		r, err = s.runInto(nil, sc, keys, argv...)
	}
	if err == nil && r.kind != ':' {
		err = errProtocol // these scripts return integers
	}
	return r.n, err
}

// evalArgs is EVALSHA of sc with keys and argv.
func evalArgs(sc *script, keys []string, argv []any) []any {
	args := make([]any, 0, 3+len(keys)+len(argv))
	args = append(args, "evalsha", sc.sha, int64(len(keys)))
	for _, k := range keys {
		args = append(args, k)
	}
	return append(args, argv...)
}

// runInto is run for a script whose reply may also be a bulk string,
// copied into dst when it fits (as do copies it).
func (s *Store) runInto(dst []byte, sc *script, keys []string, argv ...any) (reply, error) {
	args := evalArgs(sc, keys, argv)
	r, err := s.do(dst, args...)
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		args[0], args[1] = "eval", sc.src
		r, err = s.do(dst, args...)
	}
	return r, classify(err)
}

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
func (s *Store) SetNX(key string, value []byte, ttl time.Duration) (kv.SetNXOutcome, error) {
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
		return kv.Exists, nil
	}
	s.setNXWins.Add(1)
	return kv.Inserted, nil
}

// The release scripts hand the key on to the first live waiter in its line
// (KEYS[2], lease prefix after the channel) when the caller passes the
// line, else delete it, and announce it on the key's channel (hand_on,
// queue.go).
var delScript = newScript(liveHeadLua + `
if redis.call('exists', KEYS[1]) == 0 then return 0 end
hand_on(KEYS[1], ARGV[1], KEYS[2], ARGV[2])
return 1`)

// Del removes key and announces it to waiters, handing a lined key to
// its first live waiter as DelIfEq does; a full server runs it too (see
// "A full server", queue.go).
func (s *Store) Del(key string) (bool, error) {
	if err := s.durable(key); err != nil {
		return false, err
	}
	defer s.near.forget(key)
	rk := s.redisKey(key)
	line, prefix := releaseLine(rk)
	n, err := s.run(delScript, append([]string{rk}, line...), append([]any{releaseChannel(rk)}, prefix...)...)
	return n > 0, err
}

var delIfEqScript = newScript(liveHeadLua + `
if redis.call('get', KEYS[1]) == ARGV[1] then
  hand_on(KEYS[1], ARGV[2], KEYS[2], ARGV[3])
  return 1
end
return 0`)

// DelIfEq deletes key only while it holds token, in one step on the
// server that owns the key. A key that can have a line (queueKeys) is
// released by the script, which hands it to the first live waiter in line
// (hand_on): a server's native compare-and-delete cannot look at the line,
// and a lock it frees while waiters stand in line would wake each
// process's oldest waiter, any of them, and let a caller outside the line
// take it before the head. A key that cannot have a line, and any key on
// a server that refuses scripts (nobody can stand in line there: an
// attempt in line is a script), is released by the server's native command
// where it has one (see native.release). An expired key reads as absent
// either way.
func (s *Store) DelIfEq(key string, token []byte) (bool, error) {
	if err := s.noEviction(); err != nil {
		return false, err
	}
	defer s.near.forget(key)
	rk := s.redisKey(key)
	ch := releaseChannel(rk)
	release := &nativeCall{
		form: func(have native) []any { return have.release(rk, token) },
		uses: releaseCmds,
		// The native commands publish nothing: the PUBLISH that wakes
		// the key's waiters goes in the same write, and runs whether or
		// not the key was released (a waiter woken for nothing looks and
		// waits again). It names no waiter: in each process the oldest
		// is woken and tries.
		then: []any{"publish", ch, ""},
	}
	line, prefix := releaseLine(rk)
	if line == nil {
		return s.countRelease(s.runNative(release, delIfEqScript, []string{rk}, token, ch))
	}
	n, err := s.run(delIfEqScript, append([]string{rk}, line...), append([]any{token, ch}, prefix...)...)
	// A script refused unrun (NOPERM, unknown command) released nothing:
	// the native command may still release there. (A full server runs the
	// script: its hand-over needs no memory, see "A full server", queue.go.)
	if script, _ := unrun(err); script {
		n, err = s.runNative(release, delIfEqScript, []string{rk}, token, ch)
	}
	return s.countRelease(n, err)
}

// countRelease is what a release script answered (1: the token held the
// key), counted in the store's release outcomes.
func (s *Store) countRelease(n int64, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	if n == 1 {
		s.delIfEqMatches.Add(1)
	} else {
		s.delIfEqMismatches.Add(1)
	}
	return n == 1, nil
}

// setPxLua is a step's SET (stepScript): set_px(k, v, px) writes v under k
// (PX px; '0': no TTL) and returns nil, or the server's refusal (an error
// reply: nothing written), which the script returns before it writes
// anything else. The write is a guarded step's first, so a full server
// refuses it there (see "A full server", queue.go), and the call changes
// nothing.
const setPxLua = `
local function set_px(k, v, px)
  local r
  if px == '0' then r = redis.pcall('set', k, v) else r = redis.pcall('set', k, v, 'PX', px) end
  if r.err then return r end
  return nil
end
`

// lockReply is what a lock attempt's script answered (0: held, 1: taken,
// and with read, the data's value: taken and read), counted as SetNX
// counts its outcomes.
func (s *Store) lockReply(r reply, err error, read bool) (kv.SetNXOutcome, int, bool, error) {
	switch {
	case err != nil:
		return 0, 0, false, err
	case r.kind == ':' && r.n == 0:
		s.setNXLosses.Add(1)
		return kv.Exists, 0, false, nil
	case r.kind == ':' && r.n == 1:
		s.setNXWins.Add(1)
		return kv.Inserted, 0, false, nil
	case r.kind == '$' && !r.null && read:
		s.setNXWins.Add(1)
		return kv.Inserted, len(r.b), true, nil
	}
	return 0, 0, false, errProtocol
}

// expireScript refreshes a live key's TTL (ARGV[1] ms, 0: none); with
// ARGV[2] = '1' only while the key holds ARGV[3]. The flag, not an empty
// token, says "compare": an empty token is a token like any other and
// matches an empty value.
var expireScript = newScript(`
if ARGV[2] == '1' then
  if redis.call('get', KEYS[1]) ~= ARGV[3] then return 0 end
elseif redis.call('exists', KEYS[1]) == 0 then return 0 end
if ARGV[1] == '0' then redis.call('persist', KEYS[1]) else redis.call('pexpire', KEYS[1], ARGV[1]) end
return 1`)

// Expire gives a live key a new TTL (0: none).
func (s *Store) Expire(key string, ttl time.Duration) (bool, error) {
	if err := s.durable(key); err != nil {
		return false, err
	}
	n, err := s.run(expireScript, []string{s.redisKey(key)}, ms(ttl), "0", "")
	return n == 1, err
}

// ExpireIfEq is Expire only while key holds token, compared and refreshed
// in one step: SET ... IFEQ where the server has it (see native.refresh),
// else one script.
func (s *Store) ExpireIfEq(key string, token []byte, ttl time.Duration) (bool, error) {
	if err := s.noEviction(); err != nil {
		return false, err
	}
	rk, t := s.redisKey(key), ms(ttl)
	refresh := &nativeCall{
		form: func(have native) []any { return have.refresh(rk, token, t) },
		uses: setIfEqCmd,
	}
	n, err := s.runNative(refresh, expireScript, []string{rk}, t, "1", token)
	return n == 1, err
}

// Exists is EXISTS.
func (s *Store) Exists(key string) (bool, error) {
	if err := s.durable(key); err != nil {
		return false, err
	}
	r, err := s.do(nil, "exists", s.redisKey(key))
	return r.n == 1, classify(err)
}

// PTTL is PTTL: -1 for no expiry; found is false for no key.
func (s *Store) PTTL(key string) (time.Duration, bool, error) {
	if err := s.durable(key); err != nil {
		return 0, false, err
	}
	r, err := s.do(nil, "pttl", s.redisKey(key))
	if err != nil {
		return 0, false, classify(err)
	}
	switch {
	case r.n == -2:
		return 0, false, nil
	case r.n == -1:
		return -1, true, nil
	}
	return time.Duration(r.n) * time.Millisecond, true, nil
}

// incrScript answers the sum as the key's digits (a bulk string): Lua
// holds INCRBY's integer reply as a double, exact only up to 2^53, and
// would hand back a rounded sum of a larger counter.
var incrScript = newScript(`
local existed = redis.call('exists', KEYS[1])
redis.call('incrby', KEYS[1], ARGV[1])
if existed == 0 and ARGV[2] ~= '0' then redis.call('pexpire', KEYS[1], ARGV[2]) end
return redis.call('get', KEYS[1])`)

// IncrBy is INCRBY, with the TTL applied only when it created the key
// (a script then: the check and the increment must be one step). Without
// a TTL it is the plain command, which fails the same way.
func (s *Store) IncrBy(key string, delta int64, ttlOnCreate time.Duration) (int64, error) {
	if err := s.durable(key); err != nil {
		return 0, err
	}
	defer s.near.forget(key)
	if ttlOnCreate == 0 {
		r, err := s.do(nil, "incrby", s.redisKey(key), delta)
		return r.n, classify(err)
	}
	r, err := s.runInto(nil, incrScript, []string{s.redisKey(key)}, delta, ms(ttlOnCreate))
	if err != nil {
		return 0, err
	}
	if r.kind != '$' || r.null {
		return 0, errProtocol
	}
	n, perr := strconv.ParseInt(string(r.b), 10, 64)
	if perr != nil {
		return 0, errProtocol
	}
	return n, nil
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
	name := field["server_name"] // Valkey's; Redis has none
	if name == "" {
		name = "redis"
	}
	st.Facts = fmt.Sprintf("%s %s (%s mode) at %s, up %s s; maxmemory-policy %s, maxmemory %s, used_memory %s",
		name, field["redis_version"], field["redis_mode"], s.where, field["uptime_in_seconds"],
		st.Eviction, orNone(field["maxmemory_human"]), field["used_memory_human"])
	return st, nil
}

func orNone(v string) string {
	if v == "" || v == "0B" {
		return "none"
	}
	return v
}
