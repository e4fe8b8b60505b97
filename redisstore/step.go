package redisstore

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// stepScript is a Step (contract.Step), every combination of it, in one script:
// ARGV's first four flags choose its parts, as SET's options (NX, PX,
// GET) choose what one SET does.
//
//	KEYS  1 the key acted on (the lock when there is no action)
//	      2 the lock
//	      3 the lock's fence key (fenceKey), when a fence is minted or
//	        checked; else the lock again
//	      4 the lock's line (queueKeys), with a release of a lock that has
//	        one, and with an acquire in line
//	      5 the waiter's lease, with an acquire in line (StepInLine)
//	ARGV  1 acquire: '0' none, '1' SET NX, '2' SET NX and mint the fence
//	      2 guard: '0' none, '1' the lock holds the token, '2' the fence
//	        key holds the fence, '3' that, and the lock holds nothing or
//	        the token
//	      3 action: '0' none, '1' get, '2' set, '3' del, '4' expire
//	      4 release: '1' the lock, if it holds the token, is released as
//	        DelIfEq releases it (hand_on: handed to the first in its line)
//	      5 the token; 6 the lock's TTL ms ('0': none); 7 the fence
//	        (guard) or how long the fence key is kept (acquire, ms)
//	      8 the value; 9 the key's TTL ms ('0': none); 10 the key's
//	        release channel (a removal is announced there, as Del's);
//	        11 the lock's release channel; 12 its line's lease prefix;
//	        13 the waiter's id and 14 its lease ms ('0': no place), with
//	        an acquire in line
//
// The answer is 0 when the acquire found the lock held or the guard did
// not hold (nothing changed); else the sum of 1 (held), 2 (the action
// done), 4 (the lock released) and 8 (a get found a value), as an
// integer, or, when the step minted a fence or read a value, as the bulk
// string "SUM FENCE" followed by " VALUE" if a value was read. The first
// write of every step is its acquire's SET or its action's (set_px), so a
// full server refuses it there with nothing changed ("A full server",
// queue.go) and runs the rest once it has begun: the fence's mint, a DEL,
// PEXPIRE and the release take no new memory.
//
// An acquire in line (KEYS 5 given) is the line's attempt (takeInLineLua)
// in place of SET NX: the lock is taken only in the waiter's turn, or
// claimed when a release handed it over; else the answer is 0 and the
// waiter keeps its place (a lease of ARGV 14 ms; '0': refused without
// one). In its turn, the action's SET comes before the line's writes, so
// that it is still the first write a full server refuses (a waiter's ZREM
// would let it run): only dropping waiters whose lease lapsed, which
// turn_in_line does before, can come first.
var stepScript = newScript(liveHeadLua + takeInLineLua + setPxLua + `
local acquire, guard, action = ARGV[1], ARGV[2], ARGV[3]
local fence, written
-- lockv is what the guard read of the lock (false: nothing), kept for
-- the release when the action writes another key (lock_read).
local lockv, lock_read = nil, false
if acquire ~= '0' then
  if KEYS[5] then
    local turn = turn_in_line(KEYS[2], KEYS[4], ARGV[5], ARGV[13], ARGV[12])
    if not turn then
      wait_in_line(KEYS[4], KEYS[5], ARGV[5], ARGV[13], ARGV[14], ARGV[15], ARGV[16])
      return 0
    end
    if action == '2' then
      local e = set_px(KEYS[1], ARGV[8], ARGV[9])
      if e then return e end
      written = true
    end
    take_turn(turn, KEYS[2], KEYS[4], KEYS[5], ARGV[5], ARGV[6], ARGV[13])
  else
    local ok
    if ARGV[6] == '0' then
      ok = redis.call('set', KEYS[2], ARGV[5], 'NX')
    else
      ok = redis.call('set', KEYS[2], ARGV[5], 'PX', ARGV[6], 'NX')
    end
    if not ok then return 0 end
  end
  if acquire == '2' then fence = mint_fence(KEYS[3], ARGV[7]) end
elseif guard == '1' then
  lockv, lock_read = redis.call('get', KEYS[2]), true
  if lockv ~= ARGV[5] then return 0 end
elseif guard ~= '0' then
  if redis.call('get', KEYS[3]) ~= ARGV[7] then return 0 end
  if guard == '3' then
    lockv, lock_read = redis.call('get', KEYS[2]), true
    if lockv and lockv ~= ARGV[5] then return 0 end
  end
end
local done, v = false, nil
if action == '1' then
  v = redis.call('get', KEYS[1])
  done = true
elseif action == '2' then
  if not written then
    local e = set_px(KEYS[1], ARGV[8], ARGV[9])
    if e then return e end
  end
  done = true
elseif action == '3' then
  if redis.call('del', KEYS[1]) == 1 then
    redis.call('publish', ARGV[10], '')
    done = true
  end
elseif action == '4' then
  if redis.call('exists', KEYS[1]) == 1 then
    if ARGV[9] == '0' then redis.call('persist', KEYS[1]) else redis.call('pexpire', KEYS[1], ARGV[9]) end
    done = true
  end
end
local sum = 1
if done then sum = sum + 2 end
if ARGV[4] == '1' and (action ~= '4' or done) then
  if not lock_read or KEYS[1] == KEYS[2] then lockv = redis.call('get', KEYS[2]) end
  if lockv == ARGV[5] then
    hand_on(KEYS[2], ARGV[11], KEYS[4], ARGV[12])
    sum = sum + 4
  end
end
if v then sum = sum + 8 end
if not fence and not v then return sum end
local a = string.format('%d %.0f', sum, fence or 0)
if v then return a .. ' ' .. v end
return a`)

// The flags of stepScript's ARGV[1..4].
var (
	acquireFlags = [3]string{"0", "1", "2"}           // none, SET NX, and mint
	guardFlags   = [4]string{"0", "1", "2", "3"}      // contract.Guard
	actionFlags  = [5]string{"0", "1", "2", "3", "4"} // contract.Action
	releaseFlags = [2]string{"0", "1"}
)

// Step is one script (stepScript), one round trip: its keys must live on
// one server. In a Cluster they share a slot when colocated (a session's
// data and lock: see redisKey) or given one hash tag; a step whose key is
// in another slot than its lock, or that mints or checks a fence its
// lock's fence key cannot share the lock's slot for, is refused having
// sent nothing (contract.ErrInvalidArgument, saying so: oneSlot). A step on a
// lock fails, sending nothing, while a master may evict keys
// (noEviction).
func (s *Store) Step(st *contract.Step) error {
	return s.step(st, nil)
}

// StepInLine is Step for waiter id in the line of st.Lock (queueKeys), for
// a step that acquires its lock, whatever its action and fence: the
// acquire is granted only in the waiter's turn (nobody live in line before
// it, or a release handed it the lock), and then the whole step is done,
// answering as Step does; otherwise st answers as Step does when the lock
// is held (Outcome Exists, Held false, nothing done), and the waiter is put
// or kept in line with a lease of lease (0: refused without a place). One
// script (stepScript), so every combination waits in one line, in arrival
// order. A key with no line makes the plain Step; a step that does not
// acquire is refused (contract.ErrInvalidArgument).
func (s *Store) StepInLine(st *contract.Step, id string, lease time.Duration) error {
	if !st.Acquire {
		st.Reset()
		return fmt.Errorf("%w: a step waits in line only to acquire its lock", contract.ErrInvalidArgument)
	}
	return s.step(st, &inLine{id, lease})
}

// step is Step, in line as w when w is not nil.
func (s *Store) step(st *contract.Step, w *inLine) error {
	st.Reset()
	if err := contract.CheckStep(st); err != nil {
		return err
	}
	useLock := st.UsesLock()
	if !useLock && st.Action == contract.ActionNone {
		st.Held = true
		return nil
	}
	fenced := st.Fenced || st.Guard == contract.GuardFence || st.Guard == contract.GuardFenceHolder
	var lk, fk, rk string
	if useLock {
		lk = s.redisKey(st.Lock)
		fk = lk
		if fenced {
			var err error
			if lk, fk, err = s.fenceKeys(st.Lock); err != nil {
				return err
			}
		}
	}
	if st.Action != contract.ActionNone {
		rk = s.redisKey(st.Key)
		if useLock {
			if err := s.oneSlot(lk, rk, st.Lock, st.Key); err != nil {
				return err
			}
		}
	}
	if !useLock {
		lk, fk = rk, rk
		if err := s.durable(st.Key); err != nil {
			return err
		}
	} else if err := s.noEviction(); err != nil {
		return err
	}
	if st.Action == contract.ActionNone {
		rk = lk
	}
	if st.Acquire || st.Release {
		defer s.near.forget(st.Lock)
	}
	if st.Action == contract.ActionSet || st.Action == contract.ActionDel || st.Action == contract.ActionExpire {
		defer s.near.forget(st.Key)
	}

	acquire := 0
	if st.Acquire {
		acquire = 1
		if st.Fenced {
			acquire = 2
		}
	}
	var fenceArg any = "0"
	switch {
	case st.Fenced:
		fenceArg = fenceKeepMs(st.LockTTL)
	case fenced:
		fenceArg = strconv.FormatInt(st.Fence, 10)
	}
	var keyCh, lockCh string
	if st.Action == contract.ActionDel {
		keyCh = releaseChannel(rk)
	}
	release := 0
	if st.Release {
		release, lockCh = 1, releaseChannel(lk)
	}
	// A Bound grant gets its lease (lease.go), and so does the refresh
	// of a renewed lock by its holder; a release ends the renewal.
	lockTTL, leased, ttl := st.LockTTL, false, st.TTL
	if st.Acquire && st.Bound {
		lockTTL, leased = s.boundTTL(st.LockTTL)
	}
	refreshed := false // a refresh of the lock by its token, made
	if !st.Acquire && st.Action == contract.ActionExpire && st.Guard == contract.GuardToken && st.Key == st.Lock {
		var done func(bool)
		ttl, done = s.refreshing(lk, st.Token, st.TTL)
		defer func() { done(refreshed) }()
	}
	var sent time.Duration
	if leased {
		sent = monoNow()
	}
	keys := make([]string, 3, 5)
	keys[0], keys[1], keys[2] = rk, lk, fk
	argv := make([]any, 11, 14)
	argv[0], argv[1], argv[2], argv[3] = acquireFlags[acquire], guardFlags[st.Guard], actionFlags[st.Action], releaseFlags[release]
	argv[4], argv[5], argv[6] = st.Token, ms(lockTTL), fenceArg
	argv[7], argv[8], argv[9], argv[10] = st.Value, ms(ttl), keyCh, lockCh
	if st.Release {
		line, prefix := releaseLine(lk)
		keys, argv = append(keys, line...), append(argv, prefix...)
	} else if w != nil {
		if line, prefix, ok := queueKeys(lk); ok {
			keys = append(keys, line, prefix+w.id)
			argv = append(argv, prefix, w.id, ms(w.lease))
			if s.handsOverStep(st) {
				var dk string
				if st.Action == contract.ActionGet {
					dk = rk
				}
				argv = append(argv,
					fmt.Sprintf(",%d,%s,%v,%d,%d", ms(lockTTL), acquireFlags[acquire], fenceArg, len(st.Token), len(fk)),
					fk+dk)
			}
		}
	}
	r, err := s.runInto(st.Dst, stepScript, keys, argv...)
	err = s.stepReply(st, r, err)
	if st.Release && (err != nil || !st.Held || st.Released) {
		// Released, or not this holder's (a step whose outcome is unknown
		// lets it lapse within the lease); a guarded expire that found no
		// key leaves the lock held, and renewed.
		s.renew.drop(lk, st.Token)
	}
	if err != nil {
		return err
	}
	if leased && st.Held {
		s.renew.hold(lk, st.Token, sent, st.LockTTL)
	}
	refreshed = st.Done
	return nil
}

// stepReply sets st's outputs from what stepScript answered, counting an
// acquire as SetNX counts it and a release as DelIfEq does. A value read
// is moved to the start of st.Dst if it fits (the reply may have been
// read into st.Dst itself: copy moves).
func (s *Store) stepReply(st *contract.Step, r reply, err error) error {
	if err != nil {
		return err
	}
	var sum, fence int64
	var value []byte
	switch {
	case r.kind == ':':
		sum = r.n
	case r.kind == '$' && !r.null:
		digits, rest, _ := bytes.Cut(r.b, []byte{' '})
		f, v, read := bytes.Cut(rest, []byte{' '})
		var err1, err2 error
		sum, err1 = strconv.ParseInt(string(digits), 10, 64)
		fence, err2 = strconv.ParseInt(string(f), 10, 64)
		if err1 != nil || err2 != nil || read != (sum&8 != 0) {
			return errProtocol
		}
		value = v
	default:
		return errProtocol
	}
	if sum < 0 || sum > 15 || sum != 0 && sum&1 == 0 || st.Fenced && sum != 0 && fence <= 0 {
		return errProtocol
	}
	st.Held = sum&1 != 0
	if st.Acquire {
		if st.Held {
			st.Outcome = contract.Inserted
			s.setNXWins.Add(1)
		} else {
			st.Outcome = contract.Exists
			s.setNXLosses.Add(1)
		}
		if st.Fenced {
			st.Fence = fence
		}
	}
	st.Done = sum&2 != 0
	if st.Released = sum&4 != 0; st.Released {
		s.delIfEqMatches.Add(1)
	}
	if st.Found = sum&8 != 0; st.Found {
		st.N = len(value)
		if st.N <= len(st.Dst) {
			copy(st.Dst, value)
		}
	}
	return nil
}

// oneSlot refuses, on a Redis Cluster, a call whose key (Redis name rk)
// is in another slot than its lock (lk): one script cannot reach both, and
// the server's CROSSSLOT would read as an unknown outcome. Nothing is
// sent. Elsewhere every key is on the one server.
func (s *Store) oneSlot(lk, rk, lock, key string) error {
	if s.mode != Cluster || keySlot(rk) == keySlot(lk) {
		return nil
	}
	return fmt.Errorf("%w: on a Redis Cluster a key must be in its lock's slot: key %q and lock %q are not; "+
		"give both one hash tag, e.g. {order:42}", contract.ErrInvalidArgument, key, lock)
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
