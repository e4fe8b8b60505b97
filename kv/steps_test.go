package kv

import "time"

// The members that are one Step each, as package backend writes them (it
// imports kv, so these tests cannot import it), for the tests of this
// package: each is the Step of backend's function of the same name.

func (s *Store) SetNXFenced(key string, value []byte, ttl time.Duration) (SetNXOutcome, int64, error) {
	st := Step{Lock: key, Token: value, LockTTL: ttl, Acquire: true, Fenced: true}
	err := s.Step(&st)
	return st.Outcome, st.Fence, err
}

func (s *Store) SetGuarded(key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	st := Step{Lock: guardKey, Token: guardToken, Guard: GuardToken, Action: ActionSet, Key: key, Value: value, TTL: ttl}
	err := s.Step(&st)
	return st.Held, err
}

func (s *Store) DelGuarded(key, guardKey string, guardToken []byte) (bool, error) {
	st := Step{Lock: guardKey, Token: guardToken, Guard: GuardToken, Action: ActionDel, Key: key}
	err := s.Step(&st)
	return st.Held, err
}

func (s *Store) SetFenced(key string, value []byte, ttl time.Duration, lock string, fence int64) (bool, error) {
	st := Step{Lock: lock, Guard: GuardFence, Fence: fence, Action: ActionSet, Key: key, Value: value, TTL: ttl}
	err := s.Step(&st)
	return st.Held, err
}

func (s *Store) DelFenced(key, lock string, fence int64) (bool, error) {
	st := Step{Lock: lock, Guard: GuardFence, Fence: fence, Action: ActionDel, Key: key}
	err := s.Step(&st)
	return st.Held, err
}

// SetFencedToken and DelFencedToken are SetFencedRelease and
// DelFencedRelease without the release: the fenced write of token's
// holder.
func (s *Store) SetFencedToken(key string, value []byte, ttl time.Duration, lock string, fence int64, token []byte) (bool, error) {
	st := Step{Lock: lock, Token: token, Guard: GuardFenceHolder, Fence: fence, Action: ActionSet, Key: key, Value: value, TTL: ttl}
	err := s.Step(&st)
	return st.Held, err
}

func (s *Store) DelFencedToken(key, lock string, fence int64, token []byte) (bool, error) {
	st := Step{Lock: lock, Token: token, Guard: GuardFenceHolder, Fence: fence, Action: ActionDel, Key: key}
	err := s.Step(&st)
	return st.Held, err
}
