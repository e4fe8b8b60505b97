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
