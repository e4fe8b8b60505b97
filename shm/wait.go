package shm

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// The wait table: waitSlots slots of waitSlotSize bytes through which a
// caller of Wait sleeps until the key it waits for is removed.
//
//	[0:8)    ctl     owner tag<<32 | state
//	[8:12)   seq     futex word: incremented (then woken) when the state becomes woken
//	[12:16)  shard
//	[16:24)  hash    the key's 64-bit hash
//	[24:32)  ticket  from the shard's counter: lower is older
//
// A waiter claims a free slot by CAS under its shard's lock, fills it, and
// marks it waiting; it then sleeps on seq (FUTEX_WAIT, shared) for at most
// the key's remaining TTL, its own budget, and maxWaitSleep, after which it
// looks at the key again under the lock. A removal of a key with waiters
// (Del, DelIfEq, DelGuarded, expiry, eviction) marks the waiting slot with
// that key's hash and the lowest ticket woken, under the same lock, and
// wakes it: one waiter per removal, oldest first, no herd. A read/write
// lock step (rwlock.go) wakes as its decision says, the oldest waiter or
// every waiter on the key, while the key may still hold an entry. A slot whose
// owner died is freed by whoever finds it so (a waker, recovery, a
// registering waiter); the shard's count of waiters is derived and
// recomputed when the shard is recovered.
const (
	waitSlotSize = 32
	maxWaitSleep = 100 * time.Millisecond

	wFree        = 0
	wRegistering = 1
	wWaiting     = 2
	wWoken       = 3
)

func (g *segment) waitCtl(i int) *uint64    { return g.u64(g.waitOff + int64(i)*waitSlotSize) }
func (g *segment) waitSeq(i int) *uint32    { return g.u32(g.waitOff + int64(i)*waitSlotSize + 8) }
func (g *segment) waitShard(i int) *uint32  { return g.u32(g.waitOff + int64(i)*waitSlotSize + 12) }
func (g *segment) waitHash(i int) *uint64   { return g.u64(g.waitOff + int64(i)*waitSlotSize + 16) }
func (g *segment) waitTicket(i int) *uint64 { return g.u64(g.waitOff + int64(i)*waitSlotSize + 24) }

func ctlState(c uint64) int    { return int(c & 0xffffffff) }
func ctlOwner(c uint64) uint32 { return uint32(c >> 32) }

// register claims a wait slot for key hash h in sh and returns it, or -1 if
// every slot is taken. Caller holds sh's lock.
func (s *Store) register(sh *shard, h uint64) int {
	g := s.g
	start := rand.IntN(waitSlots)
	for k := 0; k < waitSlots; k++ {
		i := (start + k) % waitSlots
		c := atomic.LoadUint64(g.waitCtl(i))
		// A woken slot whose owner died is nobody's: take it too.
		if c != 0 && (ctlState(c) != wWoken || g.tagAlive(ctlOwner(c))) {
			continue
		}
		if !atomic.CompareAndSwapUint64(g.waitCtl(i), c, uint64(s.tag)<<32|wRegistering) {
			continue
		}
		atomic.StoreUint32(g.waitShard(i), uint32(sh.i))
		atomic.StoreUint64(g.waitHash(i), h)
		t := sh.u64(sTicket)
		ticket := atomic.LoadUint64(t)
		atomic.StoreUint64(t, ticket+1)
		atomic.StoreUint64(g.waitTicket(i), ticket)
		sh.addU32(sWaiters, 1)
		atomic.StoreUint64(g.waitCtl(i), uint64(s.tag)<<32|wWaiting)
		return i
	}
	return -1
}

// unregister frees slot i after a timeout and reports false, or reports
// true if it was woken meanwhile (it is then this waiter's turn). Caller
// holds sh's lock.
func (s *Store) unregister(sh *shard, i int) (woken bool) {
	mine := uint64(s.tag) << 32
	if atomic.CompareAndSwapUint64(s.g.waitCtl(i), mine|wWaiting, 0) {
		sh.addU32(sWaiters, -1)
		return false
	}
	atomic.StoreUint64(s.g.waitCtl(i), 0)
	return true
}

// wake marks slot i, waiting as c, woken and wakes its owner.
func (s *Store) wake(sh *shard, i int, c uint64) bool {
	if !atomic.CompareAndSwapUint64(s.g.waitCtl(i), c, uint64(ctlOwner(c))<<32|wWoken) {
		return false
	}
	sh.addU32(sWaiters, -1)
	atomic.AddUint32(s.g.waitSeq(i), 1)
	futexWakeOne(s.g.waitSeq(i))
	return true
}

// wakeOne wakes the live waiter on key hash h in sh with the oldest
// ticket, freeing the slots of dead ones it meets. Caller holds sh's lock.
func (s *Store) wakeOne(sh *shard, h uint64) {
	g := s.g
	for {
		best, bestTicket, bestCtl := -1, uint64(0), uint64(0)
		for i := 0; i < waitSlots; i++ {
			c := atomic.LoadUint64(g.waitCtl(i))
			if ctlState(c) != wWaiting || atomic.LoadUint32(g.waitShard(i)) != uint32(sh.i) || atomic.LoadUint64(g.waitHash(i)) != h {
				continue
			}
			if t := atomic.LoadUint64(g.waitTicket(i)); best < 0 || t < bestTicket {
				best, bestTicket, bestCtl = i, t, c
			}
		}
		if best < 0 {
			return
		}
		if !g.tagAlive(ctlOwner(bestCtl)) {
			if atomic.CompareAndSwapUint64(g.waitCtl(best), bestCtl, 0) {
				sh.addU32(sWaiters, -1)
			}
			continue
		}
		if s.wake(sh, best, bestCtl) {
			return
		}
	}
}

// wakeAll wakes every waiter in sh on key hash h, or every waiter in sh
// with anyKey. Caller holds sh's lock.
func (s *Store) wakeAll(sh *shard, h uint64, anyKey bool) {
	for i := 0; i < waitSlots; i++ {
		c := atomic.LoadUint64(s.g.waitCtl(i))
		if ctlState(c) == wWaiting && atomic.LoadUint32(s.g.waitShard(i)) == uint32(sh.i) &&
			(anyKey || atomic.LoadUint64(s.g.waitHash(i)) == h) {
			s.wake(sh, i, c)
		}
	}
}

// Wait blocks for at most timeout until key holds no live entry, and
// reports whether it is free when it returns. It returns early when the
// entry is removed (one waiter per removal, oldest first: a woken caller
// is expected to take the key at once) or when its TTL passes, and it
// returns true whenever it is woken, even with the key still held: a lock
// step wakes waiters whose next attempt may now be granted (a shared
// grant, a writer's claim left alone by the last reader). Every sleep
// is bounded by maxWaitSleep, after which the key is looked at again, so a
// lost wake-up (its waker killed) costs at most that.
func (s *Store) Wait(key string, timeout time.Duration) (free bool, err error) {
	sh, h, tag, tk, err := s.lockKey(key)
	if err != nil {
		return false, err
	}
	defer s.leave(tk)
	slot := -1 // the wait slot this call registered, once it has
	defer func() {
		// A refusal after register (the lock refused: file removed,
		// seed changed, shard broken; or a corruption caught under it,
		// by catchHeld, which has run by now) frees the slot.
		if err != nil && slot >= 0 {
			s.abandon(sh, h, slot)
		}
	}()
	locked := true // sh, for a corruption found under it
	defer s.catchHeld(sh, sh, &locked, &err)
	var t int64 // the expiry clock, read when an entry's TTL needs it
	_, b := s.live(sh, h, tag, key, &t)
	if b == noBlock || timeout <= 0 {
		locked = false
		s.unlock(sh)
		return b == noBlock, nil
	}
	deadline := now() + int64(timeout)
	at := sh.entryExpireAt(b)
	slot = s.register(sh, h)
	locked = false
	s.unlock(sh)
	for {
		var seq uint32
		if slot >= 0 {
			seq = atomic.LoadUint32(s.g.waitSeq(slot))
			if ctlState(atomic.LoadUint64(s.g.waitCtl(slot))) == wWoken {
				atomic.StoreUint64(s.g.waitCtl(slot), 0)
				return true, nil
			}
		}
		d := min(time.Duration(deadline-now()), maxWaitSleep)
		if at != 0 {
			// The entry is gone once the expiry clock reaches at: sleep
			// a tick past it, and again if the coarse clock lags more.
			d = min(d, time.Duration(at-expiryNow()+tick))
		}
		if slot < 0 {
			d = min(d, lockPoll) // no slot: poll
		}
		if d > 0 {
			if slot >= 0 {
				futexSleep(s.g.waitSeq(slot), seq, d)
			} else {
				time.Sleep(d)
			}
		}
		if err := s.lock(sh); err != nil {
			return false, err
		}
		locked = true
		if slot >= 0 && ctlState(atomic.LoadUint64(s.g.waitCtl(slot))) == wWoken {
			locked = false
			s.unlock(sh)
			atomic.StoreUint64(s.g.waitCtl(slot), 0)
			return true, nil
		}
		t = 0
		_, b = s.live(sh, h, tag, key, &t)
		if b == noBlock || now() >= deadline {
			woken := slot >= 0 && s.unregister(sh, slot)
			locked = false
			s.unlock(sh)
			return woken || b == noBlock, nil
		}
		at = sh.entryExpireAt(b)
		if slot < 0 {
			slot = s.register(sh, h)
		}
		locked = false
		s.unlock(sh)
	}
}

// abandon frees wait slot i, registered by a Wait on key hash h in sh that
// is refused before it ends (its error returned), so that the slot, owned
// by this live process, neither takes the key's wake-ups (wakeOne's
// oldest ticket) nor stays counted in sWaiters until the process exits.
// It takes sh's lock word as lock does, but without the file's check or
// the broken mark, which refused the call: the wait table and sWaiters
// are not the shard's entries, and undoing its own registration under the
// lock keeps the count exact for the processes the shard still serves (a
// removed file's other mappers; none, if it is broken). A wake-up that
// reached the slot first is handed on to the key's next waiter. Caller
// holds no lock (catchHeld has released one held at a corruption).
//
// A SIGKILL at any step leaves the table usable: before the lock, a slot
// of a dead owner, which wakeOne (waiting) or register (woken) frees, and
// recountWaiters on the shard's next recovery; holding it, a dead owner's
// lock, whose recovery recounts the waiters; after unregister, nothing.
func (s *Store) abandon(sh *shard, h uint64, i int) {
	if w := sh.u32(sLock); !atomic.CompareAndSwapUint32(w, 0, s.tag) {
		if tookOver, began := s.g.lockWordHeld(w, s.tag); tookOver {
			s.recoverShard(sh)
			s.noteDeadOwnerWait(now() - began)
		}
	}
	if s.unregister(sh, i) {
		s.wakeOne(sh, h)
	}
	s.unlock(sh)
}

// recountWaiters frees the wait slots whose owners died and recounts sh's
// waiters. Caller holds sh's lock (and is recovering it).
func (s *Store) recountWaiters(sh *shard) {
	g := s.g
	var n uint32
	for i := 0; i < waitSlots; i++ {
		c := atomic.LoadUint64(g.waitCtl(i))
		if c == 0 {
			continue
		}
		st := ctlState(c)
		// A registering slot belongs to a shard whose lock its owner held:
		// if the owner is dead, so is that lock's, and this is its recovery
		// or a later one.
		mine := st == wRegistering || atomic.LoadUint32(g.waitShard(i)) == uint32(sh.i)
		if !mine {
			continue
		}
		if !g.tagAlive(ctlOwner(c)) {
			atomic.CompareAndSwapUint64(g.waitCtl(i), c, 0)
			continue
		}
		if st == wWaiting && atomic.LoadUint32(g.waitShard(i)) == uint32(sh.i) {
			n++
		}
	}
	atomic.StoreUint32(sh.u32(sWaiters), n)
}
