// TTLs: Expire and ExpireIfEq give a live key a new one, PTTL reads it.

package redisstore

import "time"

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
// else one script. The refresh of a lock this process renews (lease.go)
// moves the deadline of its renewal to ttl from now, and sets the lock's
// PX to min(lease, ttl).
func (s *Store) ExpireIfEq(key string, token []byte, ttl time.Duration) (refreshed bool, err error) {
	if err := s.noEviction(); err != nil {
		return false, err
	}
	rk := s.redisKey(key)
	px, done := s.refreshing(rk, token, ttl)
	defer func() { done(refreshed) }()
	t := ms(px)
	refresh := &nativeCall{
		form: func(have native) []any { return have.refresh(rk, token, t) },
		uses: setIfEqCmd,
	}
	n, err := s.runNative(refresh, expireScript, []string{rk}, t, "1", token)
	return err == nil && n == 1, err
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
