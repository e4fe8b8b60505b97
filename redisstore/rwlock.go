package redisstore

import (
	"fmt"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// Read/write locks on Redis (the lock_* members; the rules are the
// Decide* functions in contract/rwlock.go, kept here by one script per member).
//
// A name's value stays a string, so that SET NX, GET, the release script
// and expire_if_eq treat it as on the other stores. Held exclusively, it
// is the holder's token, set with PX ttl exactly as SetNX sets it. Held for
// reading, it is a reader record in contract's encoding
// (contract.ParseReaderRecord reads it): the magic, the claim's deadline,
// then each hold's token length, token and deadline, integers as 8 bytes
// little endian. The deadlines are the store's clock, which on Redis is the
// server's: milliseconds of TIME (a Lua number is a double and holds them
// exactly, where memstore's int64 nanoseconds would not fit). The key's
// expiry is the record's expireAt (the latest deadline, none if a hold has
// none), set with the record.
//
// A grant mints its fence in its script with mint_fence (fence.go), in
// the fence key SetNXFenced uses: a name's grants of every mode and of
// SetNXFenced share one sequence. On a Cluster every key a script touches
// (the name, its fence key, its line) is in the name's slot; fenceKeys
// refuses the one kind of name whose fence cannot be.
//
// Waking: Wait's waiters listen on the name's release channel, and a
// waiter whose name stays held (a reader record) wakes before its timeout
// only on a message. Every decision that wakes publishes there in its script: an
// exclusive release, a release that frees the name and a shared grant
// publish as Del does (the head of the name's line if it has one, else
// nobody: each process wakes its oldest waiter), and the last reader's
// release that leaves a writer's claim alone publishes wakeEveryone, so
// that the writer wakes wherever it waits.

// MaxReadHolds is the most read holds one name keeps on Redis, fewer
// than contract.MaxReadHolds: every script on a read-held name decodes and
// re-encodes its whole record, server time that grows with every hold, and
// a script blocks the whole server while it runs (docs/measurements.md).
// A shared attempt on a name that has them all fails with contract.ErrNoMemory,
// as contract.DecideAcquire does at its limit; a record with more
// (written by memstore or shm, or by an older library) is read and
// released, and refuses new holds.
const MaxReadHolds = 1000

// rwLua is the record's codec and the steps the scripts share. now is the
// server's clock in ms. A script's cost is linear in the record's holds, so
// the codec does the least per hold: parse reads each hold's length and
// deadline (one string.byte each), drops lapsed holds as it reads and
// remembers where each kept hold's bytes are, without copying its token;
// find looks for a token with a plain string.find and keeps a match only
// where a kept hold begins; store_record copies runs of unchanged holds
// whole and encodes only the new or changed ones.
const rwLua = `
local MAGIC = '\0ephpm-readers\1'
local HEAD = #MAGIC + 8
local function now_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function u64(n)
  local b = {}
  for i = 1, 8 do b[i] = n % 256; n = math.floor(n / 256) end
  return string.char(b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8])
end
local function u64at(s, p)
  local a, b, c, d, e, f, g, h = string.byte(s, p, p + 7)
  return ((((((h * 256 + g) * 256 + f) * 256 + e) * 256 + d) * 256 + c) * 256 + b) * 256 + a
end
local function lapsed(d, now) return d ~= 0 and d <= now end
-- free is the record of a name with no entry.
local function free() return {v = '', claim = 0, toks = {}, dls = {}, at = {}} end
-- parse: the record v holds without its lapsed holds and claim, or nil if
-- v is not one (a plain entry: held exclusively; or a record that does not
-- decode, which counts as held). Hold i has deadline dls[i] and begins at
-- at[i] in v, in ascending order; a hold to encode anew has at[i] false
-- and its token in toks[i].
local function parse(v, now)
  if #v < HEAD or string.sub(v, 1, #MAGIC) ~= MAGIC then return nil end
  local r = {v = v, claim = u64at(v, #MAGIC + 1), toks = {}, dls = {}, at = {}}
  if lapsed(r.claim, now) then r.claim = 0 end
  local p, len, k = HEAD + 1, #v, 0
  while p <= len do
    local n = string.byte(v, p)
    if n == 0 or p + n + 8 > len then return nil end
    local d = u64at(v, p + n + 1)
    if not lapsed(d, now) then
      k = k + 1
      r.dls[k] = d; r.at[k] = p
    end
    p = p + n + 9
  end
  return r
end
-- find: the index of tok's hold in a record as parse left it, or nil.
local function find(r, tok)
  if #tok == 0 or #tok > 255 then return nil end
  local pat = string.char(#tok) .. tok
  local c = string.find(r.v, pat, HEAD + 1, true)
  while c do
    local lo, hi = 1, #r.at
    while lo <= hi do
      local mid = math.floor((lo + hi) / 2)
      local a = r.at[mid]
      if a == c then return mid elseif a < c then lo = mid + 1 else hi = mid - 1 end
    end
    c = string.find(r.v, pat, c + 1, true)
  end
  return nil
end
-- remove drops hold i of a record as parse left it.
local function remove(r, i)
  table.remove(r.dls, i); table.remove(r.at, i)
end
-- add appends a hold of tok with deadline d.
local function add(r, tok, d)
  local i = #r.dls + 1
  r.dls[i] = d; r.at[i] = false; r.toks[i] = tok
end
-- store_record sets key k to r, expiring at r's latest deadline (none if
-- a hold has none): the entry outlives each of its holds and its claim.
-- over: k holds a live entry that the record replaces, written over with
-- set_over, so that a full server runs it too (a record that shrinks or
-- keeps its size: a release, a refresh).
local function store_record(k, r, now, over)
  local out, at, forever = {MAGIC, u64(r.claim)}, r.claim, false
  local from, to -- the run of r.v's bytes being copied
  for i = 1, #r.dls do
    local d, p, last = r.dls[i], r.at[i], 0
    if d == 0 then forever = true elseif d > at then at = d end
    if p then last = p + string.byte(r.v, p) + 8 end
    if p and to and p == to + 1 then
      to = last
    else
      if to then out[#out + 1] = string.sub(r.v, from, to) end
      from, to = nil, nil
      if p then
        from, to = p, last
      else
        out[#out + 1] = string.char(#r.toks[i]) .. r.toks[i] .. u64(d)
      end
    end
  end
  if to then out[#out + 1] = string.sub(r.v, from, to) end
  local px = {}
  if not forever then px = {'PX', string.format('%.0f', at - now)} end
  if over then
    set_over(k, table.concat(out), unpack(px))
  else
    redis.call('set', k, table.concat(out), unpack(px))
  end
end
-- deadline is now + ms ('0': none, 0).
local function deadline(ms, now)
  if ms == '0' then return 0 end
  return now + tonumber(ms)
end
`

// lockAttemptScript is one attempt of lock_acquire (contract.DecideAcquire):
// KEYS name, its fence key (and its line; in line, the caller's lease);
// ARGV token, mode (0 exclusive, 1 shared), TTL ms ('0': none), claim ms
// ('0': none), fence keep ms ('0': for ever), MaxReadHolds, the release
// channel (and the line's lease prefix; in line, the waiter's id and lease
// ms). It answers the grant's fence, 0 when refused, -1 when token already
// holds the name for reading, -2 when the name has MaxReadHolds read
// holds.
//
// In line (queue.go), the attempt is decided only in the caller's turn
// (first live waiter, or nobody in line), and only then may an exclusive
// attempt claim the name, so that a claim never refuses a reader that came
// before its writer; a refused waiter is put or kept in line, its lease
// holding "rw" (no "lease_ms:token": a plain release frees the name and
// names it rather than handing it a token), unless its lease ms is '0' (an
// attempt that will not wait), and a granted one that had a place leaves
// the line before it writes the name (so that a full server grants it
// too, and only it: see "A full server", queue.go) and before its shared
// grant names the next head. An attempt refused with an error (-1, -2)
// leaves the line too, its caller giving up, and names the next head as a
// release does.
var lockAttemptScript = newScript(liveHeadLua + rwLua + `
local id = ARGV[9]
local function refused()
  if id and ARGV[10] ~= '0' then join_line(KEYS[3], KEYS[4], id, ARGV[10], 'rw') end
  return 0
end
local function leave()
  if id and redis.call('zscore', KEYS[3], id) then redis.call('zrem', KEYS[3], id); redis.call('del', KEYS[4]); return true end
  return false
end
-- give_up is leave for an attempt refused with an error (its caller stops
-- waiting): a caller that had a place was the head, and the next head's
-- turn may have come with its leaving, so it is named as a release names it.
local function give_up()
  if leave() then publish_release(ARGV[7], KEYS[3], ARGV[8]) end
end
if id then
  local h = live_head(KEYS[3], ARGV[8], id)
  if h and h ~= id then return refused() end
end
local v = redis.call('get', KEYS[1])
local now = now_ms()
local r = free()
if v then
  r = parse(v, now)
  if not r then return refused() end
end
if ARGV[2] == '0' then
  if #r.dls == 0 then
    leave()
    if ARGV[3] == '0' then
      redis.call('set', KEYS[1], ARGV[1])
    else
      redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[3])
    end
    return mint_fence(KEYS[2], ARGV[5])
  end
  -- The place in line is kept before the claim is stored: a waiter in
  -- line renews both on a full server (its renewal is the first write,
  -- see "A full server", queue.go), where a new one is refused.
  refused()
  local claim = deadline(ARGV[4], now)
  if claim ~= 0 and claim > r.claim then
    r.claim = claim
    store_record(KEYS[1], r, now)
  end
  return 0
end
if r.claim ~= 0 then return refused() end
if find(r, ARGV[1]) then give_up(); return -1 end
if #r.dls >= tonumber(ARGV[6]) then give_up(); return -2 end
add(r, ARGV[1], deadline(ARGV[3], now))
leave()
store_record(KEYS[1], r, now)
publish_release(ARGV[7], KEYS[3], ARGV[8])
return mint_fence(KEYS[2], ARGV[5])`)

// lockTurnScript is WaitLockTurn's look (see waitInLine): KEYS name,
// line, the waiter's lease; ARGV id, lease prefix, mode. -3 when another
// waiter is first in line; for the first, -2 when its attempt would be
// decided for it (the name free, or holding only lapsed holds and, for a
// reader, no claim; for a reader, only read holds and no claim), else how
// long until that may change without a message: for a reader the claim's
// end, for a writer the first read hold's deadline or half its claim's
// time left, whichever comes first (its next attempt renews the claim
// before it lapses, for readers outside the line), else the name's PTTL.
var lockTurnScript = newScript(liveHeadLua + rwLua + `
local h = live_head(KEYS[2], ARGV[2], ARGV[1])
if h and h ~= ARGV[1] then return -3 end
local v = redis.call('get', KEYS[1])
if not v then return -2 end
local now = now_ms()
local r = parse(v, now)
if not r then return redis.call('pttl', KEYS[1]) end
if ARGV[3] == '1' then
  if r.claim == 0 then return -2 end
  return math.max(r.claim - now, 1)
end
if #r.dls == 0 then return -2 end
local first = 0
for i = 1, #r.dls do
  local d = r.dls[i]
  if d ~= 0 and (first == 0 or d < first) then first = d end
end
if r.claim ~= 0 then
  local renew = now + math.floor((r.claim - now) / 2)
  if first == 0 or renew < first then first = renew end
end
if first == 0 then return -1 end
return math.max(first - now, 1)`)

// lockReleaseScript is lock_release (contract.DecideRelease): KEYS name (and its
// line); ARGV token, the release channel (and the line's lease prefix).
// 1 if token held the name, else 0. A release that frees the name hands
// it on as DelIfEq does (hand_on): to the first live waiter in its line
// whose lease holds a token (an exclusive waiter of set_nx_wait or of a
// bound lock, whose whole grant it makes when the lease carries the step),
// else it is deleted and that waiter (a waiter of lock_acquire, whose
// lease holds none) named. A release that leaves a writer's claim alone in
// it names the first live waiter (the claiming writer: in line, a writer
// claims only in its turn); for a claim and nobody in line it wakes every
// waiter instead, since a writer waiting outside a line (Wait) may stand
// behind readers the claim refuses. The shorter record is written over the
// old one (set_over), so that a full server runs the release too (see "A
// full server", queue.go).
var lockReleaseScript = newScript(liveHeadLua + rwLua + `
local v = redis.call('get', KEYS[1])
if not v then return 0 end
-- Only a record needs the clock (its holds' deadlines): an entry that
-- does not begin as one is an exclusive hold, which parse would refuse.
local now, r
if string.sub(v, 1, #MAGIC) == MAGIC then
  now = now_ms()
  r = parse(v, now)
end
if not r then
  if v ~= ARGV[1] then return 0 end
  hand_on(KEYS[1], ARGV[2], KEYS[2], ARGV[3])
  return 1
end
local i = find(r, ARGV[1])
if not i then return 0 end
remove(r, i)
if #r.dls > 0 then
  store_record(KEYS[1], r, now, true)
elseif r.claim ~= 0 then
  store_record(KEYS[1], r, now, true)
  local h = KEYS[2] and live_head(KEYS[2], ARGV[3], nil)
  if h then tell_head(ARGV[2], h) else redis.call('publish', ARGV[2], '` + wakeEveryone + `') end
else
  hand_on(KEYS[1], ARGV[2], KEYS[2], ARGV[3])
end
return 1`)

// lockRefreshScript is lock_refresh (contract.DecideRefresh): KEYS name; ARGV
// token, TTL ms ('0': none). 1 if token held the name, else 0. A record
// keeps its size (lapsed holds go), and is written over the old one, as
// lockReleaseScript stores it: a full server refreshes too.
var lockRefreshScript = newScript(setOverLua + rwLua + `
local v = redis.call('get', KEYS[1])
if not v then return 0 end
local now = now_ms()
local r = parse(v, now)
if not r then
  if v ~= ARGV[1] then return 0 end
  if ARGV[2] == '0' then redis.call('persist', KEYS[1]) else redis.call('pexpire', KEYS[1], ARGV[2]) end
  return 1
end
local i = find(r, ARGV[1])
if not i then return 0 end
r.dls[i] = deadline(ARGV[2], now); r.at[i] = false; r.toks[i] = ARGV[1]
store_record(KEYS[1], r, now, true)
return 1`)

// lockInfoScript is lock_info (contract.LockHolders): KEYS name. 0 when free,
// -1 when held exclusively, else the number of live read holds.
var lockInfoScript = newScript(rwLua + `
local v = redis.call('get', KEYS[1])
if not v then return 0 end
local r = parse(v, now_ms())
if not r then return -1 end
return #r.dls`)

// LockAttempt is one attempt of lock_acquire, one script: contract.DecideAcquire
// on the server's clock, the grant's fence minted and the waking published
// in the same script.
func (s *Store) LockAttempt(key string, token []byte, mode contract.LockMode, ttl, claim time.Duration) (contract.SetNXOutcome, int64, error) {
	return s.lockAttempt(key, token, mode, ttl, claim, nil)
}

// LockAttemptInLine is LockAttempt for waiter id in key's line, decided
// only in its turn (see lockAttemptScript); a key with no line (queueKeys)
// makes the plain attempt.
func (s *Store) LockAttemptInLine(key string, token []byte, mode contract.LockMode, ttl, claim time.Duration, id string, lease time.Duration) (contract.SetNXOutcome, int64, error) {
	return s.lockAttempt(key, token, mode, ttl, claim, &inLine{id, lease})
}

// WaitLockTurn is WaitTurn for a read/write lock's waiter in mode: true
// when a release or grant names it, or at once when its attempt would be
// decided for it (lockTurnScript).
func (s *Store) WaitLockTurn(key, id string, mode contract.LockMode, timeout time.Duration) (bool, error) {
	return s.waitInLine(key, id, timeout, lockTurnScript, int64(mode))
}

func (s *Store) lockAttempt(key string, token []byte, mode contract.LockMode, ttl, claim time.Duration, w *inLine) (contract.SetNXOutcome, int64, error) {
	if err := contract.CheckLockAttempt(key, token, mode, ttl, claim); err != nil {
		return 0, 0, err
	}
	rk, fk, err := s.fenceKeys(key)
	if err != nil {
		return 0, 0, err
	}
	if err := s.noEviction(); err != nil {
		return 0, 0, err
	}
	defer s.near.forget(key)
	// The claim is cut to whole milliseconds, down: it must not outlive
	// the caller's wait, which it already may by the time the request
	// takes to reach the server's clock.
	claimMs := max(int64(claim/time.Millisecond), 0)
	keys := []string{rk, fk}
	argv := []any{token, int64(mode), ms(ttl), claimMs, fenceKeepMs(ttl), int64(MaxReadHolds), releaseChannel(rk)}
	if line, prefix, ok := queueKeys(rk); ok {
		keys, argv = append(keys, line), append(argv, prefix)
		if w != nil {
			keys, argv = append(keys, prefix+w.id), append(argv, w.id, ms(w.lease))
		}
	}
	n, err := s.run(lockAttemptScript, keys, argv...)
	switch {
	case err != nil:
		return 0, 0, err
	case n == -1:
		return 0, 0, fmt.Errorf("%w: this token already holds the name for reading", contract.ErrInvalidArgument)
	case n == -2:
		return 0, 0, fmt.Errorf("%w: the name has %d read holds, the most one name keeps on Redis", contract.ErrNoMemory, MaxReadHolds)
	case n == 0:
		s.setNXLosses.Add(1)
		return contract.Exists, 0, nil
	case n > 0:
		s.setNXWins.Add(1)
		return contract.Inserted, n, nil
	}
	return 0, 0, errProtocol
}

// LockRelease removes token's hold of key (contract.DecideRelease), one script
// that publishes the wake its decision asks for. Any token may be asked
// about, as with del_if_eq: one that no hold can have holds nothing.
func (s *Store) LockRelease(key string, token []byte) (bool, error) {
	if err := contract.CheckKey(key); err != nil {
		return false, err
	}
	if err := s.noEviction(); err != nil {
		return false, err
	}
	defer s.near.forget(key)
	rk := s.redisKey(key)
	line, prefix := releaseLine(rk)
	// Released or not (another holds it, or the outcome is unknown and it
	// lapses within its lease), this process renews it no more.
	defer s.renew.drop(rk, token)
	return s.countRelease(s.run(lockReleaseScript, append([]string{rk}, line...), append([]any{token, releaseChannel(rk)}, prefix...)...))
}

// LockRefresh gives token's hold of key a deadline ttl from now on the
// server's clock (0: none), contract.DecideRefresh in one script. The
// refresh of a lock this process renews (a Bound grant: lease.go) sets its
// PX to min(lease, ttl) and moves its renewal's deadline to ttl from now,
// as ExpireIfEq does.
func (s *Store) LockRefresh(key string, token []byte, ttl time.Duration) (refreshed bool, err error) {
	if err := contract.CheckKey(key); err != nil {
		return false, err
	}
	if err := contract.CheckTTL(ttl); err != nil {
		return false, err
	}
	if err := s.noEviction(); err != nil {
		return false, err
	}
	defer s.near.forget(key)
	rk := s.redisKey(key)
	px, done := s.refreshing(rk, token, ttl)
	defer func() { done(refreshed) }()
	n, err := s.run(lockRefreshScript, []string{rk}, token, ms(px))
	return err == nil && n == 1, err
}

// LockInfo is contract.LockHolders of key, read by one script on the server's
// clock. Refused on a server that may evict (noEviction), as the lock
// calls are: there an evicted lock would read as free while its holder
// still works under it.
func (s *Store) LockInfo(key string) (contract.LockMode, int, error) {
	if err := contract.CheckKey(key); err != nil {
		return contract.LockExclusive, 0, err
	}
	if err := s.noEviction(); err != nil {
		return contract.LockExclusive, 0, err
	}
	n, err := s.run(lockInfoScript, []string{s.redisKey(key)})
	switch {
	case err != nil:
		return contract.LockExclusive, 0, err
	case n < 0:
		return contract.LockExclusive, 1, nil
	case n == 0:
		return contract.LockExclusive, 0, nil
	}
	return contract.LockShared, int(n), nil
}
