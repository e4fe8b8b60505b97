package memstore

import "time"

// The members that are one Step each, as package backend writes them (it
// imports kv, so these tests cannot import it), for the tests of this
// package: each is the Step of backend's function of the same name, filled
// field by field as backend fills it (a composite literal is built aside
// and copied: see prepare).

func (s *Store) SetNXFenced(key string, value []byte, ttl time.Duration) (SetNXOutcome, int64, error) {
	var st Step
	st.Lock, st.Token, st.LockTTL, st.Acquire, st.Fenced = key, value, ttl, true, true
	err := s.Step(&st)
	return st.Outcome, st.Fence, err
}

func (s *Store) SetGuarded(key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	var st Step
	st.Lock, st.Token, st.Guard, st.Action, st.Key, st.Value, st.TTL = guardKey, guardToken, GuardToken, ActionSet, key, value, ttl
	err := s.Step(&st)
	return st.Held, err
}

func (s *Store) DelGuarded(key, guardKey string, guardToken []byte) (bool, error) {
	var st Step
	st.Lock, st.Token, st.Guard, st.Action, st.Key = guardKey, guardToken, GuardToken, ActionDel, key
	err := s.Step(&st)
	return st.Held, err
}

func (s *Store) SetFenced(key string, value []byte, ttl time.Duration, lock string, fence int64) (bool, error) {
	var st Step
	st.Lock, st.Guard, st.Fence, st.Action, st.Key, st.Value, st.TTL = lock, GuardFence, fence, ActionSet, key, value, ttl
	err := s.Step(&st)
	return st.Held, err
}

func (s *Store) DelFenced(key, lock string, fence int64) (bool, error) {
	var st Step
	st.Lock, st.Guard, st.Fence, st.Action, st.Key = lock, GuardFence, fence, ActionDel, key
	err := s.Step(&st)
	return st.Held, err
}

// SetFencedToken and DelFencedToken are SetFencedRelease and
// DelFencedRelease without the release: the fenced write of token's
// holder.
func (s *Store) SetFencedToken(key string, value []byte, ttl time.Duration, lock string, fence int64, token []byte) (bool, error) {
	var st Step
	st.Lock, st.Token, st.Guard, st.Fence, st.Action, st.Key, st.Value, st.TTL = lock, token, GuardFenceHolder, fence, ActionSet, key, value, ttl
	err := s.Step(&st)
	return st.Held, err
}

func (s *Store) DelFencedToken(key, lock string, fence int64, token []byte) (bool, error) {
	var st Step
	st.Lock, st.Token, st.Guard, st.Fence, st.Action, st.Key = lock, token, GuardFenceHolder, fence, ActionDel, key
	err := s.Step(&st)
	return st.Held, err
}
