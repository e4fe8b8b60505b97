// Releases: Del and DelIfEq, whose scripts hand a lined key on to its first
// live waiter and announce the release to waiters, and the count of their
// outcomes.

package redisstore

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
	s.renew.drop(rk, token)
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
