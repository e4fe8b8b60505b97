package memstore

import (
	"time"

	"github.com/ephpm/ephpm/contract"
)

// The members that are one Step each, as package backend writes them (it
// imports memstore, so these tests cannot import it), for the tests of this
// package: each is the Step of backend's function of the same name, filled
// field by field as backend fills it (a composite literal is built aside
// and copied: see prepare).

func (s *Store) SetNXFenced(key string, value []byte, ttl time.Duration) (contract.SetNXOutcome, int64, error) {
	var st contract.Step
	st.Lock, st.Token, st.LockTTL, st.Acquire, st.Fenced = key, value, ttl, true, true
	err := s.Step(&st)
	return st.Outcome, st.Fence, err
}

func (s *Store) SetGuarded(key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	var st contract.Step
	st.Lock, st.Token, st.Guard, st.Action, st.Key, st.Value, st.TTL = guardKey, guardToken, contract.GuardToken, contract.ActionSet, key, value, ttl
	err := s.Step(&st)
	return st.Held, err
}

func (s *Store) DelGuarded(key, guardKey string, guardToken []byte) (bool, error) {
	var st contract.Step
	st.Lock, st.Token, st.Guard, st.Action, st.Key = guardKey, guardToken, contract.GuardToken, contract.ActionDel, key
	err := s.Step(&st)
	return st.Held, err
}

func (s *Store) SetFenced(key string, value []byte, ttl time.Duration, lock string, fence int64) (bool, error) {
	var st contract.Step
	st.Lock, st.Guard, st.Fence, st.Action, st.Key, st.Value, st.TTL = lock, contract.GuardFence, fence, contract.ActionSet, key, value, ttl
	err := s.Step(&st)
	return st.Held, err
}

func (s *Store) DelFenced(key, lock string, fence int64) (bool, error) {
	var st contract.Step
	st.Lock, st.Guard, st.Fence, st.Action, st.Key = lock, contract.GuardFence, fence, contract.ActionDel, key
	err := s.Step(&st)
	return st.Held, err
}

// SetFencedToken and DelFencedToken are SetFencedRelease and
// DelFencedRelease without the release: the fenced write of token's
// holder.
func (s *Store) SetFencedToken(key string, value []byte, ttl time.Duration, lock string, fence int64, token []byte) (bool, error) {
	var st contract.Step
	st.Lock, st.Token, st.Guard, st.Fence, st.Action, st.Key, st.Value, st.TTL = lock, token, contract.GuardFenceHolder, fence, contract.ActionSet, key, value, ttl
	err := s.Step(&st)
	return st.Held, err
}

func (s *Store) DelFencedToken(key, lock string, fence int64, token []byte) (bool, error) {
	var st contract.Step
	st.Lock, st.Token, st.Guard, st.Fence, st.Action, st.Key = lock, token, contract.GuardFenceHolder, fence, contract.ActionDel, key
	err := s.Step(&st)
	return st.Held, err
}
