package memstore

import (
	"strings"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// waiter is one caller blocked in Wait. Its channel has room for one wake-up,
// sent under the shard lock by whoever removes the key.
type waiter struct{ woken chan struct{} }

// waitQueue holds a key's waiters, oldest first. The shard's map holds it by
// pointer so it can change without storing the key again: a map assignment
// would replace the map's owned key with the caller's, which may be C memory.
type waitQueue struct{ list []*waiter }

// Wait blocks until key holds no live entry or timeout passes, whichever
// comes first, and reports whether the key is free when it returns.
//
// It returns early when the entry is removed (Del, DelIfEq, expiry) or when
// its TTL passes on the store's clock; a
// renewed TTL keeps it waiting in its place. Removals wake waiters one at a time, oldest first, so that
// callers who wait in order to take the key (a lock) are served roughly in
// arrival order instead of all racing for it; a woken caller is expected to
// try to take the key at once. Callers waiting when the TTL passes all wake.
func (s *Store) Wait(key string, timeout time.Duration) bool {
	sh, h, _ := s.locate(key)
	sh.mu.Lock()
	c := clock{s: s}
	b, _ := s.live(sh, h, key, &c)
	if b == nil {
		sh.mu.Unlock()
		return true
	}
	if timeout <= 0 {
		sh.mu.Unlock()
		return false
	}
	end := time.Now().Add(timeout)
	w := &waiter{woken: make(chan struct{}, 1)}
	q := sh.waiters[key]
	if q == nil {
		if sh.waiters == nil {
			sh.waiters = make(map[string]*waitQueue)
		}
		q = &waitQueue{}
		sh.waiters[strings.Clone(key)] = q
	}
	q.list = append(q.list, w)
	for {
		sleep := time.Until(end)
		// The entry is gone once the store's clock reaches its expiry:
		// sleep a tick past it, and again if the coarse clock lags more.
		if at := blockExpireAt(b); at != 0 {
			sleep = min(sleep, time.Duration(at-c.now()+s.tick))
		}
		sh.mu.Unlock()

		timer := time.NewTimer(sleep)
		select {
		case <-w.woken:
			timer.Stop()
			return true
		case <-timer.C:
		}

		sh.mu.Lock()
		select {
		case <-w.woken: // woken between the timer and the lock: it is our turn
			sh.mu.Unlock()
			return true
		default:
		}
		c = clock{s: s}
		if b, _ = s.live(sh, h, key, &c); b == nil || !time.Now().Before(end) {
			sh.dropWaiter(key, w)
			sh.mu.Unlock()
			return b == nil
		}
		// Still there (its TTL was renewed): wait on, in the same place.
	}
}

// wakeOne wakes the oldest waiter on key. Caller holds sh.mu.
func (sh *shard) wakeOne(key string) {
	q := sh.waiters[key]
	if q == nil {
		return
	}
	q.list[0].woken <- struct{}{}
	q.list[0] = nil
	q.list = q.list[1:]
	if len(q.list) == 0 {
		delete(sh.waiters, key)
	}
}

// wakeAll wakes every waiter on key, oldest first. Caller holds sh.mu.
func (sh *shard) wakeAll(key string) {
	for sh.waiters[key] != nil {
		sh.wakeOne(key)
	}
}

// wake wakes whom a lock decision names among key's waiters. Caller holds
// sh.mu.
func (sh *shard) wake(key string, w contract.LockWake) {
	switch {
	case len(sh.waiters) == 0:
	case w == contract.WakeOne:
		sh.wakeOne(key)
	case w == contract.WakeAll:
		sh.wakeAll(key)
	}
}

// dropWaiter removes w from key's queue if it is still there. Caller holds
// sh.mu.
func (sh *shard) dropWaiter(key string, w *waiter) {
	q := sh.waiters[key]
	if q == nil {
		return
	}
	for i, x := range q.list {
		if x == w {
			q.list = append(q.list[:i], q.list[i+1:]...)
			break
		}
	}
	if len(q.list) == 0 {
		delete(sh.waiters, key)
	}
}
