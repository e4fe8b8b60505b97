package redisstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// Fencing tokens on Redis. A lock name's latest fence is a key of its own,
// fenceKey: the grant (SET NX PX) and the mint are one script, and so are
// the check and the write of SetFenced (stepScript, with the fence key
// its guard). The fence key expires fenceKeep after its lock's
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
// match). After a failover the clock is the promoted replica's: on hosts
// apart, one whose clock is behind the dead master's by more than the
// failover took could mint a fence at or below one the master granted, so
// fences assume the servers' clocks agree to better than the failover
// time (TestFencesGoOnUpAcrossAFailoverThatLostTheGrant runs both on one
// host's clock).
//
// In a Cluster, the lock, its fence key and a fenced write's key must be in
// one slot for one script to see them. The fence key carries the lock's
// hash tag (or the lock key itself as one), so it shares the lock's slot
// for every name but one with no hash tag that holds a '}'; such a name,
// and a SetFenced whose key is in another slot than its lock, is refused
// with contract.ErrInvalidArgument saying so, having changed nothing.

// mintFenceLua mints a grant's fence in fence key fk, kept for keep ms
// ('0': for ever), and returns it: every script that grants a lock mints
// with it, so a name's grants of every kind share one sequence.
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
`

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
			"cannot share its slot; give the name a hash tag, e.g. {orders}:lock", contract.ErrInvalidArgument, lock)
	}
	return rk, fk, nil
}

// inLine is a waiter in a lock's line: its id and its lease.
type inLine struct {
	id    string
	lease time.Duration
}

// Fence is GET of the fence key: 0 if the name was never granted (or its
// fence key was removed). Refused on a server that may evict
// (noEviction), as the fenced calls are: there an evicted fence key
// would read as 0, below fences already granted.
func (s *Store) Fence(name string) (int64, error) {
	if err := contract.CheckKey(name); err != nil {
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
