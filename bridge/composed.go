package bridge

import (
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/lockwait"
)

// The members whose Go side is not one Backend method, as Go functions of
// Go values: memberlist's Calls table names each, and its export
// (exports_gen.go) converts the C arguments and answers with the results
// as it does for a Backend method of the same shape. The waiting members
// run lockwait.Locker's loop over the backend's one attempt and answer what
// the attempt answers (contract.Inserted: granted).

// timedOut is the outcome of a lock wait: Inserted when granted, else
// Exists, counted in lockTimeouts unless the wait failed.
func timedOut(res lockwait.Result, err error) contract.SetNXOutcome {
	if res.Acquired {
		return contract.Inserted
	}
	if err == nil {
		lockTimeouts.Add(1)
	}
	return contract.Exists
}

// setNXWait is set_nx_wait.
func setNXWait(key string, value []byte, ttl, wait time.Duration) (contract.SetNXOutcome, error) {
	locker := lockwait.Locker{Store: current()}
	res, err := locker.Acquire(key, value, ttl, wait)
	return timedOut(res, err), err
}

// setNXWaitFenced is set_nx_wait_fenced.
func setNXWaitFenced(key string, value []byte, ttl, wait time.Duration) (contract.SetNXOutcome, int64, error) {
	b := current()
	locker := lockwait.Locker{Store: b}
	res, fence, err := locker.AcquireFenced(b, key, value, ttl, wait)
	return timedOut(res, err), fence, err
}

// setNXWaitGet is set_nx_wait_get.
func setNXWaitGet(key string, value []byte, ttl, wait time.Duration, dataKey string, dst []byte) (contract.SetNXOutcome, int, bool, error) {
	locker := lockwait.Locker{Store: current()}
	res, read, err := locker.AcquireGet(key, value, ttl, wait, dataKey, dst)
	return timedOut(res, err), read.N, read.Found, err
}

// setNXWaitGetFenced is set_nx_wait_get_fenced.
func setNXWaitGetFenced(key string, value []byte, ttl, wait time.Duration, dataKey string, dst []byte) (contract.SetNXOutcome, int, bool, int64, error) {
	b := current()
	locker := lockwait.Locker{Store: b}
	res, read, fence, err := locker.AcquireGetFenced(b, key, value, ttl, wait, dataKey, dst)
	return timedOut(res, err), read.N, read.Found, fence, err
}

// lockAcquire is lock_acquire: a bad token or mode is refused before any
// attempt.
func lockAcquire(key string, token []byte, mode contract.LockMode, ttl, wait time.Duration) (contract.SetNXOutcome, int64, error) {
	if err := contract.CheckLockAttempt(key, token, mode, ttl, 0); err != nil {
		return contract.Exists, 0, err
	}
	b := current()
	locker := lockwait.Locker{Store: b}
	res, fence, err := locker.AcquireLock(b, key, token, mode, ttl, wait)
	return timedOut(res, err), fence, err
}

// configureText is configure: a setting's name and value cross as any
// bytes (configure says which it knows), not as a key.
func configureText(name, value []byte) error {
	return configure(string(name), string(value))
}

// beginRequest is begin_request: a backend whose store can be taken away
// checks it now.
func beginRequest() error {
	if r, ok := current().(backend.Revalidator); ok {
		return r.Revalidate()
	}
	return nil
}
