package redisstore

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ephpm/ephpm/kv"
)

// Fencing tokens on Redis. A lock name's latest fence is a key of its own,
// fenceKey: the grant (SET NX PX) and the mint are one script, and so are
// the check and the write of SetFenced (the guarded write's script, the
// fence key its guard). The fence key expires fenceKeep after its lock's
// TTL (a lock without TTL keeps it for ever), so the server holds fence
// keys only for the names granted in about the last day.
//
// A fence is max(the stored fence + 1, the server's clock in µs): when the
// fence key is gone (it expired, FLUSHDB, a failover lost the latest
// write, an operator deleted it) the next grant continues from the clock,
// above every earlier fence unless the server's clock went back. While the
// key is there the stored fence alone makes each grant greater than the
// last. A grant and its lock's release are two commands, each taking the
// server more than a microsecond, so the counter never runs ahead of the
// clock in practice and losing the key loses nothing. A fence granted
// before the key went is refused by SetFenced (the key holds no fence to
// match).
//
// In a Cluster, the lock, its fence key and a fenced write's key must be in
// one slot for one script to see them. The fence key carries the lock's
// hash tag (or the lock key itself as one), so it shares the lock's slot
// for every name but one with no hash tag that holds a '}'; such a name,
// and a SetFenced whose key is in another slot than its lock, is refused
// with kv.ErrInvalidArgument saying so, having changed nothing.

// mintFenceLua mints a grant's fence in fence key fk, kept for keep ms
// ('0': for ever), and returns it: every script that grants a lock mints
// with it, so a name's grants of every kind share one sequence.
// fenced_answer is a fenced grant's answer: the fence, or, given a data
// key that holds a value v, the bulk string "FENCE v" (the fence in
// decimal, a space, then v).
const mintFenceLua = `
local function mint_fence(fk, keep)
  local t = redis.call('time')
  local n = math.max((tonumber(redis.call('get', fk)) or 0) + 1, tonumber(t[1]) * 1000000 + tonumber(t[2]))
  if keep == '0' then
    redis.call('set', fk, string.format('%.0f', n))
  else
    redis.call('set', fk, string.format('%.0f', n), 'PX', keep)
  end
  return n
end
local function fenced_answer(n, dk)
  if dk then
    local v = redis.call('get', dk)
    if v then return string.format('%.0f', n) .. ' ' .. v end
  end
  return n
end
`

// setNXFencedScript is SET NX PX of KEYS[1] (ARGV[1], PX ARGV[2]) and the
// mint into KEYS[2] (kept ARGV[3] ms, '0': for ever), and with KEYS[3] its read: 0 if
// the lock is held, else the fenced answer.
var setNXFencedScript = newScript(mintFenceLua + `
local ok
if ARGV[2] == '0' then
  ok = redis.call('set', KEYS[1], ARGV[1], 'NX')
else
  ok = redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX')
end
if not ok then return 0 end
return fenced_answer(mint_fence(KEYS[2], ARGV[3]), KEYS[3])`)

// lineFencedScript is lineScript's attempt in line with the mint of
// setNXFencedScript: KEYS lock, line, lease, fence key (and the data
// key); ARGV those of lineScript, then the fence key's keep ms. 0 when the
// caller is in line, else the fenced answer.
var lineFencedScript = newScript(liveHeadLua + takeInLineLua + mintFenceLua + `
if not take_in_line(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]) then return 0 end
return fenced_answer(mint_fence(KEYS[4], ARGV[6]), KEYS[5])`)

// fencedReleaseScript is SetFencedRelease (ARGV[1] 'set') and
// DelFencedRelease ('del'): KEYS the key, the lock's fence key, the lock
// (and its line); ARGV the mode, the fence, the holder's token, the value
// and TTL ms (set) or the key's release channel (del), the lock's release
// channel, the line's lease prefix. Nothing happens, and the answer is 0,
// unless the fence key holds the fence and the lock holds nothing or the
// token; then the key is written or removed (a removal announced as
// delGuardedScript announces it), the lock released if it holds the
// token, and the answer is 1, or 2 when it also released the lock. A
// refused write (a full server's OOM: set_px, store.go) is the script's
// error, with nothing changed (the holder releases the lock after it). A
// removal is a DEL, which a full server runs.
var fencedReleaseScript = newScript(liveHeadLua + setPxLua + `
if redis.call('get', KEYS[2]) ~= ARGV[2] then return 0 end
local holder = redis.call('get', KEYS[3])
if holder and holder ~= ARGV[3] then return 0 end
if ARGV[1] == 'del' then
  if redis.call('del', KEYS[1]) == 1 then redis.call('publish', ARGV[4], '') end
else
  local e = set_px(KEYS[1], ARGV[4], ARGV[5])
  if e then return e end
end
if holder then
  hand_on(KEYS[3], ARGV[6], KEYS[4], ARGV[7])
  return 2
end
return 1`)

// fenceKeep is how long a fence key outlives its lock's TTL: a holder that
// writes later than that is refused as if the lock had been granted again,
// and the key is gone.
const fenceKeep = 24 * time.Hour

// fenceKeepMs is how long, in ms as the scripts take it, the fence key of
// a grant with ttl is kept: fenceKeep past the TTL, or for ever ("0") for
// a grant without one.
func fenceKeepMs(ttl time.Duration) int64 {
	if ttl == 0 {
		return 0
	}
	return ms(ttl + fenceKeep)
}

// fenceKey is where the latest fence of the lock at Redis key rk lives.
func fenceKey(rk string) string {
	if _, ok := hashTag(rk); ok {
		return "ephpm:fence:" + rk
	}
	return "ephpm:fence:{" + rk + "}"
}

// hashTag is the part of key a Cluster hashes, if key has a hash tag: what
// lies between the first '{' and the first '}' after it, when not empty.
func hashTag(key string) (string, bool) {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j], true
		}
	}
	return key, false
}

// keySlot is key's Cluster slot: CRC16 (XMODEM) of its hash tag, mod 16384.
func keySlot(key string) int {
	tag, _ := hashTag(key)
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) & 16383
}

// fenceKeys returns the lock's Redis key and its fence key, or, in a
// Cluster, an error if they cannot share a slot.
func (s *Store) fenceKeys(lock string) (string, string, error) {
	rk := s.redisKey(lock)
	fk := fenceKey(rk)
	if s.mode == Cluster && keySlot(rk) != keySlot(fk) {
		return "", "", fmt.Errorf("%w: lock name %q has no hash tag and holds a '}': on a Redis Cluster its fence "+
			"cannot share its slot; give the name a hash tag, e.g. {orders}:lock", kv.ErrInvalidArgument, lock)
	}
	return rk, fk, nil
}

// SetNXFenced is SET NX PX and the mint of the grant's fence, one script.
func (s *Store) SetNXFenced(key string, value []byte, ttl time.Duration) (kv.SetNXOutcome, int64, error) {
	out, _, _, fence, err := s.fencedAttempt(key, value, ttl, nil, "", nil)
	return out, fence, err
}

// SetNXGetFenced is SetNXFenced that reads dataKey when it takes the lock,
// as SetNXGet does, in the same script.
func (s *Store) SetNXGetFenced(key string, value []byte, ttl time.Duration, dataKey string, dst []byte) (kv.SetNXOutcome, int, bool, int64, error) {
	return s.fencedAttempt(key, value, ttl, nil, dataKey, dst)
}

// SetNXGetFencedInLine is SetNXGetFenced for waiter id in key's line, as
// SetNXGetInLine is SetNXGet (dataKey "": nothing read).
func (s *Store) SetNXGetFencedInLine(key string, value []byte, ttl time.Duration, id string, lease time.Duration,
	dataKey string, dst []byte) (kv.SetNXOutcome, int, bool, int64, error) {
	return s.fencedAttempt(key, value, ttl, &inLine{id, lease}, dataKey, dst)
}

// inLine is a waiter in a lock's line: its id and its lease.
type inLine struct {
	id    string
	lease time.Duration
}

// fencedAttempt is one fenced grant attempt at lock key, in line as w when
// w is not nil, reading dataKey (if not "") into dst once granted.
func (s *Store) fencedAttempt(key string, value []byte, ttl time.Duration, w *inLine, dataKey string, dst []byte) (kv.SetNXOutcome, int, bool, int64, error) {
	if err := kv.CheckWrite(key, value, ttl); err != nil {
		return 0, 0, false, 0, err
	}
	rk, fk, err := s.fenceKeys(key)
	if err != nil {
		return 0, 0, false, 0, err
	}
	if err := s.noEviction(); err != nil {
		return 0, 0, false, 0, err
	}
	defer s.near.forget(key)
	sc, keys, argv := setNXFencedScript, []string{rk, fk}, []any{value, ms(ttl), fenceKeepMs(ttl)}
	if w != nil {
		line, prefix, _ := queueKeys(rk)
		sc, keys = lineFencedScript, []string{rk, line, prefix + w.id, fk}
		argv = []any{value, ms(ttl), w.id, ms(w.lease), prefix, fenceKeepMs(ttl)}
	}
	if dataKey != "" {
		keys = append(keys, s.redisKey(dataKey))
	}
	r, err := s.runInto(dst, sc, keys, argv...)
	return s.fencedReply(r, err, dst)
}

// fencedReply is what a fenced grant's script answered (0: held; a fence:
// taken; "FENCE value": taken and dataKey read, the value then moved to
// the start of dst if it fits), counted as SetNX counts its outcomes.
func (s *Store) fencedReply(r reply, err error, dst []byte) (kv.SetNXOutcome, int, bool, int64, error) {
	switch {
	case err != nil:
		return 0, 0, false, 0, err
	case r.kind == ':' && r.n == 0:
		s.setNXLosses.Add(1)
		return kv.Exists, 0, false, 0, nil
	case r.kind == ':' && r.n > 0:
		s.setNXWins.Add(1)
		return kv.Inserted, 0, false, r.n, nil
	case r.kind == '$' && !r.null:
		digits, value, ok := bytes.Cut(r.b, []byte{' '})
		fence, perr := strconv.ParseInt(string(digits), 10, 64)
		if !ok || perr != nil || fence <= 0 {
			break
		}
		if len(value) <= len(dst) {
			copy(dst, value) // r.b may be dst itself: copy moves
		}
		s.setNXWins.Add(1)
		return kv.Inserted, len(value), true, fence, nil
	}
	return 0, 0, false, 0, errProtocol
}

// Fence is GET of the fence key: 0 if the name was never granted (or its
// fence key was removed). Refused on a server that may evict
// (noEviction), as the fenced calls are: there an evicted fence key
// would read as 0, below fences already granted.
func (s *Store) Fence(name string) (int64, error) {
	if err := kv.CheckKey(name); err != nil {
		return 0, err
	}
	if err := s.noEviction(); err != nil {
		return 0, err
	}
	_, fk, err := s.fenceKeys(name)
	if err != nil {
		return 0, err
	}
	r, err := s.do(nil, "get", fk)
	if err != nil {
		return 0, classify(err)
	}
	if r.null {
		return 0, nil
	}
	n, err := strconv.ParseInt(string(r.b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: fence key %s holds %q", errProtocol, fk, r.b)
	}
	return n, nil
}

// SetFenced writes key only while the lock's fence key holds fence: one
// script, so in a Cluster key must be in the lock's slot (give both one
// hash tag).
func (s *Store) SetFenced(key string, value []byte, ttl time.Duration, lock string, fence int64) (bool, error) {
	rk, fk, err := s.fencedKeys(key, value, ttl, lock, fence)
	if err != nil {
		return false, err
	}
	defer s.near.forget(key)
	// The guarded write's script: the fence key must hold the fence.
	n, err := s.run(setGuardedScript, []string{rk, fk}, value, strconv.FormatInt(fence, 10), ms(ttl))
	return n == 1, err
}

// DelFenced deletes key only while the lock's fence key holds fence: the
// guarded delete's script, which announces a deletion to waiters.
func (s *Store) DelFenced(key, lock string, fence int64) (bool, error) {
	rk, fk, err := s.fencedKeys(key, nil, 0, lock, fence)
	if err != nil {
		return false, err
	}
	defer s.near.forget(key)
	n, err := s.run(delGuardedScript, []string{rk, fk}, strconv.FormatInt(fence, 10), releaseChannel(rk))
	return n == 1, err
}

// SetFencedRelease writes key while the lock's fence key holds fence and
// the lock holds nothing or token, and then releases the lock if it holds
// token: one script (fencedReleaseScript), in a Cluster with key in the
// lock's slot.
func (s *Store) SetFencedRelease(key string, value []byte, ttl time.Duration, lock string, fence int64, token []byte) (bool, error) {
	return s.fencedRelease(key, value, ttl, lock, fence, token, false)
}

// DelFencedRelease is SetFencedRelease that removes key.
func (s *Store) DelFencedRelease(key, lock string, fence int64, token []byte) (bool, error) {
	return s.fencedRelease(key, nil, 0, lock, fence, token, true)
}

func (s *Store) fencedRelease(key string, value []byte, ttl time.Duration, lock string, fence int64, token []byte, del bool) (bool, error) {
	rk, fk, err := s.fencedKeys(key, value, ttl, lock, fence)
	if err != nil {
		return false, err
	}
	defer s.near.forget(key)
	lk := s.redisKey(lock)
	line, prefix := releaseLine(lk)
	keys := append([]string{rk, fk, lk}, line...)
	argv := []any{"set", strconv.FormatInt(fence, 10), token, value, ms(ttl)}
	if del {
		argv = []any{"del", strconv.FormatInt(fence, 10), token, releaseChannel(rk), "0"}
	}
	n, err := s.run(fencedReleaseScript, keys, append(append(argv, releaseChannel(lk)), prefix...)...)
	if err == nil && n == 2 {
		s.delIfEqMatches.Add(1) // counted as the composed release counts it
	}
	return n >= 1, err
}

// fencedKeys returns the Redis keys of a fenced write (of value with ttl)
// or delete of key under lock's fence, after the checks they need: the
// arguments' (kv.CheckFencedWrite); in a Cluster, key must be in the
// lock's slot; the server must not evict.
func (s *Store) fencedKeys(key string, value []byte, ttl time.Duration, lock string, fence int64) (string, string, error) {
	if err := kv.CheckFencedWrite(key, value, ttl, lock, fence); err != nil {
		return "", "", err
	}
	lk, fk, err := s.fenceKeys(lock)
	if err != nil {
		return "", "", err
	}
	rk := s.redisKey(key)
	if s.mode == Cluster && keySlot(rk) != keySlot(lk) {
		return "", "", fmt.Errorf("%w: on a Redis Cluster a fenced write's key must be in its lock's slot: "+
			"key %q and lock %q are not; give both one hash tag, e.g. {order:42}", kv.ErrInvalidArgument, key, lock)
	}
	if err := s.noEviction(); err != nil {
		return "", "", err
	}
	return rk, fk, nil
}
