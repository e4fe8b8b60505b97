package shm

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A shard lock is a 32-bit futex word in the segment: 0 when free, else the
// owner's tag (see proc.go) with bit 0 set while others may be waiting.
//
// Acquiring it is a CAS from 0; a caller that finds it held spins for a
// few microseconds (loads and PAUSE: a live owner holds a shard for less,
// and runtime.Gosched would enter Go's scheduler, which wakes idle threads
// with futex calls of its own), then sets the
// contended bit and sleeps in FUTEX_WAIT (a shared futex: the word is in a
// MAP_SHARED mapping that other processes map elsewhere). A release wakes
// it; a live owner holds a shard for microseconds, so a waiter whose sleep
// runs out has found an owner that is slow or dead. It then looks whether
// the owner's tag is dead: first lockCheckFirst after it began waiting for
// that owner, then at intervals doubling up to lockCheckMax. If the owner is
// dead it takes the lock over by CAS from the word it saw, and the shard is
// recovered before use (see recover.go). So a waiter finds a dead owner
// within lockCheckMax of the death (about lockCheckFirst if it began
// waiting then), and the checks (a kill(pid, 0) and a read of
// /proc/PID/stat) cost nothing while owners release in time. Releasing swaps in 0
// and wakes one waiter if the contended bit was set. A lock is held only
// within one call of the store, never across calls and never while
// sleeping.
const (
	lockCheckFirst = time.Millisecond
	lockCheckMax   = 4 * time.Millisecond
	lockPoll       = 10 * time.Millisecond // wait.go's poll with no wait slot
	contended      = 1
	lockSpins      = 200 // spins of a load and a PAUSE before sleeping: a few us

	futexWait = 0
	futexWake = 1
)

func futex(addr *uint32, op int, val uint32, timeout *unix.Timespec) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), uintptr(op), uintptr(val),
		uintptr(unsafe.Pointer(timeout)), 0, 0)
}

// futexSleep sleeps while *addr == val, for at most d (woken early by a
// wake on addr, a signal, or a change of *addr before it sleeps).
func futexSleep(addr *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	futex(addr, futexWait, val, &ts)
}

// futexWakeOne is kept out of line so that its callers (unlockWord) inline.
//
//go:noinline
func futexWakeOne(addr *uint32) { futex(addr, futexWake, 1, nil) }

// lockWord acquires the lock word w for tag and reports whether it was
// taken over from a dead owner: then the caller must recover what it guards
// before using it. began is when it started to wait (now()), 0 if it took
// the word without waiting.
func (g *segment) lockWord(w *uint32, tag uint32) (tookOver bool, began int64) {
	if atomic.CompareAndSwapUint32(w, 0, tag) {
		return false, 0
	}
	return g.lockWordHeld(w, tag)
}

// lockWordHeld is lockWord after its first CAS found w held.
func (g *segment) lockWordHeld(w *uint32, tag uint32) (tookOver bool, began int64) {
	for i := 0; i < lockSpins; i++ {
		if atomic.LoadUint32(w) == 0 && atomic.CompareAndSwapUint32(w, 0, tag) {
			return false, 0
		}
		cpuRelax()
	}
	began = now()
	var owner uint32 // the holder this waiter is timing
	var next int64   // when to look whether owner is alive
	interval := lockCheckFirst
	for {
		v := atomic.LoadUint32(w)
		if v == 0 {
			// Taken after waiting: keep the bit set, others may sleep too.
			if atomic.CompareAndSwapUint32(w, 0, tag|contended) {
				return false, began
			}
			continue
		}
		t := now()
		if v&^contended != owner {
			owner, interval = v&^contended, lockCheckFirst
			next = t + int64(interval)
		}
		if v&contended == 0 && !atomic.CompareAndSwapUint32(w, v, v|contended) {
			continue
		}
		if t < next {
			futexSleep(w, v|contended, time.Duration(next-t))
			continue
		}
		interval = min(2*interval, lockCheckMax)
		next = t + int64(interval)
		if owner != tag && !g.tagAlive(owner) && atomic.CompareAndSwapUint32(w, v|contended, tag|contended) {
			return true, began
		}
	}
}

// unlockWord releases w.
func unlockWord(w *uint32) {
	if atomic.SwapUint32(w, 0)&contended != 0 {
		futexWakeOne(w)
	}
}

// lockKey enters a call on key: it locates key's shard and takes its lock.
// unlockKey ends the call.
func (s *Store) lockKey(key string) (*shard, uint64, uint32, *ticket, error) {
	tk, err := s.enter()
	if err != nil {
		return nil, 0, 0, nil, err
	}
	sh, h, tag := s.locate(key)
	if err := s.lock(sh); err != nil {
		s.leave(tk)
		return nil, 0, 0, nil, err
	}
	return sh, h, tag, tk, nil
}

func (s *Store) unlockKey(sh *shard, tk *ticket) {
	s.unlock(sh)
	s.leave(tk)
}

// locate returns key's shard, its hash and its index tag.
func (s *Store) locate(key string) (*shard, uint64, uint32) {
	h := s.g.hashOf(key)
	return &s.shards[h&uint64(len(s.shards)-1)], h, tagOfHash(h)
}

// lock takes sh's lock, recovering the shard first if its owner died. It
// fails instead once the segment's file was removed, checking the file
// first when that is due (removed.go): every call that reads or writes
// entries takes a shard's lock, or reads with none (readUnlocked) only
// while no check is due.
func (s *Store) lock(sh *shard) error {
	if s.check.Load() != checkNotDue {
		if err := s.checkDue(); err != nil {
			return err
		}
	}
	// lockWord's first step here, where the compiler inlines it.
	if w := sh.u32(sLock); !atomic.CompareAndSwapUint32(w, 0, s.tag) {
		if tookOver, began := s.g.lockWordHeld(w, s.tag); tookOver {
			s.recoverShard(sh)
			s.noteDeadOwnerWait(now() - began)
		}
	}
	if sh.isBroken() {
		s.unlock(sh)
		return s.corruptError(sh.i)
	}
	return nil
}

// unlock counts the release in sh's count of them (read.go), then releases
// the lock. The count's store needs no order among the shard's others (the
// lock word covers them), only to come before the release's swap, which
// orders it.
func (s *Store) unlock(sh *shard) {
	p := sh.u64(sSeq)
	storeDerived64(p, *p+1) // only the holder writes it
	unlockWord(sh.u32(sLock))
}

// lockTwo takes the locks of a two-key operation in shard order, so that
// two such operations never deadlock; b may be a.
func (s *Store) lockTwo(a, b *shard) error {
	first, second := a, b
	if b.i < a.i {
		first, second = b, a
	}
	if err := s.lock(first); err != nil {
		return err
	}
	if second != first {
		if err := s.lock(second); err != nil {
			s.unlock(first)
			return err
		}
	}
	return nil
}

func (s *Store) unlockTwo(a, b *shard) {
	s.unlock(a)
	if b != a {
		s.unlock(b)
	}
}
