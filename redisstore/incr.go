// IncrBy: INCRBY, or a script when the key's TTL is set only by creating it.

package redisstore

import (
	"strconv"
	"time"
)

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
