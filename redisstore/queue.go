package redisstore

import (
	"strings"
	"time"
)

// Waiters line up for a lock, across every process sharing the server, so
// that a release hands the lock to exactly one of them, the one that came
// first. A lock's line is a sorted set beside it (in its slot): member a
// waiter's id (random per acquisition, from lockwait.Locker), score the
// server's time when it first queued. Each waiter also holds a lease, a
// key with a TTL that its every attempt renews, whose value is the lease's
// length in ms and the token the waiter would set ("1500:token"); a waiter
// whose process died stops renewing it, and once it lapses the waiter is
// dropped from the line by whoever looks next.
//
// A release hands the lock on in its own script (handOnLua): it sets the
// lock to the first live waiter's token, with the lease's length as its
// TTL, takes that waiter out of line and publishes its id on the waiter's
// own channel (headChannel), which wakes that waiter alone (on a
// standalone server through its own subscriber connection, turnwait.go;
// else through its process's hub: wake). The
// waiter's next attempt finds the lock holding its token and claims it:
// the real TTL, and the read. A head that died after its last renewal so
// holds the lock for one lease at most, never for the lock's TTL. The lock goes to the first live waiter,
// or to anyone when the line is empty, so a newcomer never overtakes a
// waiter; a lock is never free while someone live waits in line.

// queueKeys returns the line of lock key rk and the prefix of its waiters'
// leases, both in rk's slot. ok is false for a key whose slot no hash tag
// can name (it is hashed whole and holds a '}'): such a lock has no line,
// and its waiters are woken as Wait's are.
func queueKeys(rk string) (queue, leasePrefix string, ok bool) {
	tag, tagged := hashTag(rk)
	if !tagged && strings.IndexByte(rk, '}') >= 0 {
		return "", "", false
	}
	return "ephpm:line:{" + tag + "}", "ephpm:lease:{" + tag + "}:", true
}

// A full server. A noeviction server over its maxmemory refuses a
// command that may take memory (SET, ZADD: "denyoom") with OOM, and inside
// a script (one without a "#!lua flags=" line, as all of these are) only as
// the script's first write: once a script has written, the rest of it runs
// (Redis and Valkey cannot stop a script half-way, and do not roll one
// back; TestAFullServerRefusesOnlyAScriptsFirstWrite holds the servers to
// it). So every write that releases a lock or keeps a waiter's place needs
// no new memory: a hand-over PERSISTs the lock before it SETs the head's token
// there, a waiter already in line renews its lease with PEXPIRE, and a
// waiter whose turn came leaves the line (ZREM, DEL) before it SETs the
// lock, which takes about what its place held. A full server then still
// frees, hands over and keeps the line, while it refuses what would grow,
// having changed nothing: a new waiter's place (the attempt fails with
// contract.ErrNoMemory) and a guarded write's value (see stepScript; the
// guard stays held, and its holder's release then runs).

// liveHeadLua is the first waiter in line whose lease is live (or is
// me), dropping those whose lease lapsed, and what its lease holds (which
// hand_on reads: one GET, not an EXISTS and then a GET); nil for an empty
// line. A lease key is not among a script's KEYS (the head is found in the script):
// while the line's slot moves between Cluster masters the key may be on
// the new master already, where this server refuses to look (an error
// that redis.call would raise half-way through the script); a waiter whose
// lease cannot be looked at counts as live, and a hand-over to it
// (hand_on) frees the lock and names it instead, for its own attempt to
// take (sent again by the client until the slot's keys are together).
// join_line puts waiter id in line (kept in its place if it is there) with
// its lease key lease holding value for lease_ms, and keeps the line as
// long as the lease; a waiter already in line with that lease only has it
// renewed, which a full server runs too.
const liveHeadLua = tellHeadLua + `
local function live_head(line, prefix, me)
  while true do
    local h = redis.call('zrange', line, 0, 0)[1]
    if not h then return nil end
    if h == me then return h end
    local l = redis.pcall('get', prefix .. h)
    if l then return h, l end
    redis.call('zrem', line, h)
  end
end
local function join_line(line, lease, id, lease_ms, value)
  if redis.call('get', lease) == value and redis.call('zscore', line, id) then
    redis.call('pexpire', lease, lease_ms)
  else
    local t = redis.call('time')
    redis.call('zadd', line, 'NX', t[1] * 1000000 + t[2], id)
    redis.call('set', lease, value, 'PX', lease_ms)
  end
  if redis.call('pttl', line) < tonumber(lease_ms) then redis.call('pexpire', line, lease_ms) end
end
local function publish_release(ch, line, prefix)
  local h = line and live_head(line, prefix, nil)
  if h then tell_head(ch, h) else redis.call('publish', ch, '') end
end
` + handOnLua

// tellHeadLua is tell_head(ch, h): the release message naming waiter h,
// on release channel ch's head channel for h and its named channel (see
// releaseChannel).
const tellHeadLua = `
local function tell_head(ch, h)
  redis.call('publish', ch .. '\0' .. h, h)
  redis.call('publish', ch .. '\0', h)
end
`

// setOverLua is set_over(k, ...): SET k ... over k's live entry, which a
// full server runs too. Not a DEL and then the SET: while k's slot moves
// between Cluster masters a key the script deleted is one it may no
// longer write (refused half-way, the DEL done). A PERSIST first is the
// script's first write, after which Redis 7 and Valkey run the SET on a
// full server; Redis 8 refuses it while memory is over the limit, and
// then k is deleted first after all (freeing what the SET takes back), as
// it was before slots moved under scripts.
const setOverLua = `
local function set_over(k, ...)
  redis.call('persist', k)
  local r = redis.pcall('set', k, ...)
  if type(r) == 'table' and r.err then
    redis.call('del', k)
    redis.call('set', k, ...)
  end
end
`

// leasePartsLua is lease_parts(l): what a waiter's lease value l holds,
// or nil if it holds no token. A lease is "LEASE_MS:TOKEN", the lease's
// length and the token a release sets for the waiter; a waiter whose whole
// step a release may do for it (handsOverStep, handover.go) adds
// that step after the length, "LEASE_MS,TTL,ACQUIRE,KEEP,TOKEN_LEN,
// FENCE_KEY_LEN:TOKEN FENCE_KEY DATA_KEY" (no spaces): its lock's PX, its
// acquire flag (stepScript's ARGV 1), how long its fence key is kept, and
// the keys its fence is minted in and its value is read from (empty: no
// read). lease_parts returns the length, the token and, for such a lease,
// the step as a table.
const leasePartsLua = `
local function lease_parts(l)
  if type(l) ~= 'string' then return nil end
  local c = string.find(l, ':', 1, true)
  if not c or c == 1 then return nil end
  local f = {}
  for x in string.gmatch(string.sub(l, 1, c - 1), '[^,]+') do f[#f + 1] = x end
  if #f == 1 then return f[1], string.sub(l, c + 1), nil end
  local tl, fl = tonumber(f[5]), tonumber(f[6])
  return f[1], string.sub(l, c + 1, c + tl), {ttl = f[2], acquire = f[3], keep = f[4],
    fk = string.sub(l, c + tl + 1, c + tl + fl), dk = string.sub(l, c + tl + fl + 1)}
end
`

// handOnLua is the release of a lock that has a line: hand_on(lock, ch,
// line, prefix) sets lock to the first live waiter's token for its lease
// (see the lease's value, lease_parts; written over with set_over, which a
// full server runs too), takes the waiter out of line (its lease
// stays until it claims the lock or the lease lapses, so that its look
// can tell the lock is its) and publishes its id on ch. A waiter whose
// lease carries its step gets the whole step done here instead: the lock
// set for the step's PX, its fence minted, its value read, and the step's
// answer (as stepScript answers it) published on its head channel after
// its id and a space, so that it makes no call of its own once woken (a
// value over 1 MiB is left for the head's claim to read, its lock handed
// over as above). With
// nobody live in line (or no line: line nil), or a head whose lease holds
// no token, the lock is deleted and the head, if any, named as before.
const handOnLua = setOverLua + mintFenceLua + leasePartsLua + `
local function hand_on(lock, ch, line, prefix)
  if line then
    local h, l = live_head(line, prefix, nil)
    if h then
      local lease_ms, token, st = lease_parts(l)
      if st then
        set_over(lock, token, 'PX', st.ttl)
        redis.call('zrem', line, h)
        local sum, fence, v = 1, 0, nil
        if st.acquire == '2' then fence = mint_fence(st.fk, st.keep) end
        if st.dk ~= '' then
          v = redis.call('get', st.dk)
          sum = sum + 2
          if v then sum = sum + 8 end
          if v and #v > 1048576 then
            -- Too long for a pub/sub message (a server cuts off a
            -- subscriber whose output passes its pubsub limit): the head
            -- claims its lock and reads the value itself.
            tell_head(ch, h)
            return
          end
        end
        local a = string.format('%s %d %.0f', h, sum, fence)
        if v then a = a .. ' ' .. v end
        redis.call('publish', ch .. '\0' .. h, a)
        redis.call('publish', ch .. '\0', h)
        return
      end
      if token then
        set_over(lock, token, 'PX', lease_ms)
        redis.call('zrem', line, h)
        tell_head(ch, h)
        return
      end
      redis.call('del', lock)
      tell_head(ch, h)
      return
    end
  end
  redis.call('del', lock)
  redis.call('publish', ch, '')
end
`

// takeInLineLua is the line's part of one attempt of waiter id at lock
// (its line, its lease key lease, the lease prefix), in two halves, so
// that an attempt can put its own first write between them (a Step's SET:
// stepScript). turn_in_line only reads (but for dropping waiters whose
// lease lapsed): 'claim' if a release handed the lock to id (it holds
// id's token: tokens are random per acquisition), 'take' if the lock is
// free and id is first live waiter in line (or the line is empty), else
// nil: another's turn. take_turn then takes it: the lock is set to token
// (PX ttl; '0': none), or, claimed, given that real TTL, and id leaves the
// line. Not id's turn, wait_in_line keeps id in line (in its place) with a
// renewed lease holding lease_ms and the token ("1500:token", for a
// release to hand the lock over with); with lease_ms '0' (an attempt that
// will not wait) it is refused without a place in line.
const takeInLineLua = `
local function turn_in_line(lock, line, token, id, prefix)
  local held = redis.call('get', lock)
  if held then
    if held == token then return 'claim' end
    return nil
  end
  local h = live_head(line, prefix, id)
  if not h or h == id then return 'take' end
  return nil
end
local function take_turn(turn, lock, line, lease, token, ttl, id)
  -- Only a caller with a place frees it first: a write, even one that
  -- changes nothing, would let a full server run the SET below for a
  -- caller who had none ("A full server").
  if redis.call('zscore', line, id) then
    redis.call('zrem', line, id)
    redis.call('del', lease)
  end
  if ttl == '0' then
    if turn == 'claim' then redis.call('persist', lock) else redis.call('set', lock, token) end
  elseif turn == 'claim' then
    redis.call('pexpire', lock, ttl)
  else
    redis.call('set', lock, token, 'PX', ttl)
  end
end
local function wait_in_line(line, lease, token, id, lease_ms, step, keys)
  if lease_ms ~= '0' then
    join_line(line, lease, id, lease_ms, lease_ms .. (step or '') .. ':' .. token .. (keys or ''))
  end
end
`

// turnScript says whether it is waiter ARGV[1]'s turn at lock KEYS[1]
// (line KEYS[2], the waiter's lease KEYS[3], lease prefix ARGV[2]): -2
// when a release handed the lock to the caller (it holds the token in the
// caller's lease) or it is free and the caller first in line, -3 when it
// is free and another's turn, else the lock's PTTL (-1: no TTL).
var turnScript = newScript(liveHeadLua + `
local held = redis.call('get', KEYS[1])
if held then
  local _, token = lease_parts(redis.call('get', KEYS[3]))
  if token == held then return -2 end
  return redis.call('pttl', KEYS[1])
end
local h = live_head(KEYS[2], ARGV[2], ARGV[1])
if not h or h == ARGV[1] then return -2 end
return -3`)

// leaveScript takes waiter ARGV[1] out of lock KEYS[1]'s line (KEYS[2],
// its lease KEYS[3]), and if the lock is free, or was handed to this
// waiter (it holds the token in its lease), hands it on to the next in
// line (channel ARGV[2], lease prefix ARGV[3]). A head that leaves a lock
// held names the next head, whose turn may have come with it (a reader
// beside readers, once the writer before it left the line).
var leaveScript = newScript(liveHeadLua + `
local was_head = live_head(KEYS[2], ARGV[3], nil) == ARGV[1]
redis.call('zrem', KEYS[2], ARGV[1])
local _, token = lease_parts(redis.call('get', KEYS[3]))
redis.call('del', KEYS[3])
local held = redis.call('get', KEYS[1])
if not held or token == held then
  hand_on(KEYS[1], ARGV[2], KEYS[2], ARGV[3])
elseif was_head then
  publish_release(ARGV[2], KEYS[2], ARGV[3])
end
return 1`)

// InLine reports whether key's waiters can line up (see queueKeys).
func (s *Store) InLine(key string) bool {
	_, _, ok := queueKeys(s.redisKey(key))
	return ok
}

// WaitTurn is Wait for waiter id in key's line: it returns true when a
// release names it, or at once when the lock is free and it is first in
// line, and false after timeout (cut short to when the lock expires).
func (s *Store) WaitTurn(key, id string, timeout time.Duration) (bool, error) {
	return s.waitInLine(key, id, timeout, turnScript)
}

// waitInLine is WaitTurn with sc as the look: sc takes KEYS lock, line,
// the waiter's lease, ARGV id, the lease prefix, then argv, and answers
// -2 (its turn), -3 (another's: wait for a message) or how long to wait
// at most in ms (-1: no bound).
func (s *Store) waitInLine(key, id string, timeout time.Duration, sc *script, argv ...any) (bool, error) {
	rk := s.redisKey(key)
	turn, _, err := s.waitLine(key, rk, id, timeout, s.lineLook(rk, id, sc, argv...))
	return turn, err
}

// waitLine is the wait of waiter id of key's line (Redis key rk) after
// look: on a subscriber connection of its own on a standalone server
// (waitTurnDirect), else through the process's hub (wait). answer is a
// step's answer the release's message carried (handover.go).
func (s *Store) waitLine(key, rk, id string, timeout time.Duration, look func() (bool, time.Duration, error)) (turn bool, answer string, err error) {
	if s.direct != nil {
		return s.waitTurnDirect(releaseChannel(rk), id, timeout, look)
	}
	return s.wait(key, id, timeout, look)
}

// lineLook is waiter id's look at lock rk with sc (see waitInLine): its
// turn now, or how long to wait for a message at most (-1: no bound).
func (s *Store) lineLook(rk, id string, sc *script, argv ...any) func() (bool, time.Duration, error) {
	line, prefix, _ := queueKeys(rk)
	return func() (bool, time.Duration, error) {
		n, err := s.run(sc, []string{rk, line, prefix + id}, append([]any{id, prefix}, argv...)...)
		if err != nil {
			return false, 0, err
		}
		switch n {
		case -2:
			return true, 0, nil
		case -3:
			return false, -1, nil
		}
		return false, time.Duration(n) * time.Millisecond, nil
	}
}

// LeaveLine takes waiter id out of key's line (a waiter that gives up),
// telling the next one if the lock is free, or handing it on if it was
// handed to id; its first write is a ZREM, so a full server runs it all.
func (s *Store) LeaveLine(key, id string) error {
	rk := s.redisKey(key)
	line, prefix, _ := queueKeys(rk)
	_, err := s.run(leaveScript, []string{rk, line, prefix + id}, id, releaseChannel(rk), prefix)
	return err
}

// releaseLine is what a release script takes to tell the first waiter in
// line: the line as a second key, and the lease prefix as the argument
// after the channel. None for a key without a line.
func releaseLine(rk string) (keys []string, argv []any) {
	if line, prefix, ok := queueKeys(rk); ok {
		return []string{line}, []any{prefix}
	}
	return nil, nil
}
