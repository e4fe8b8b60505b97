package shm

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A shard lock is a 32-bit futex word in the segment: 0 when free, else the
// owner's tag (see proc.go) with bit 0 set while others may be waiting.
//
// Acquiring it is a CAS from 0; a caller that finds it held sets the
// contended bit and sleeps in FUTEX_WAIT (a shared futex: the word is in a
// MAP_SHARED mapping that other processes map elsewhere) for at most
// lockPoll. Every lockPoll it looks whether the owner's tag is dead; if so
// it takes the lock over by CAS from the word it saw, and the shard is
// recovered before use (see recover.go). So nobody waits much more than
// lockPoll for a shard whose owner was killed. Releasing swaps in 0 and
// wakes one waiter if the contended bit was set. A lock is held only within
// one call of the store, never across calls and never while sleeping.
const (
	lockPoll  = 10 * time.Millisecond
	contended = 1
	lockSpins = 64

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

func futexWakeOne(addr *uint32) { futex(addr, futexWake, 1, nil) }

// lockWord acquires the lock word w for tag and reports whether it was
// taken over from a dead owner: then the caller must recover what it guards
// before using it.
func (g *segment) lockWord(w *uint32, tag uint32) (tookOver bool) {
	if atomic.CompareAndSwapUint32(w, 0, tag) {
		return false
	}
	for i := 0; i < lockSpins; i++ {
		if atomic.LoadUint32(w) == 0 && atomic.CompareAndSwapUint32(w, 0, tag) {
			return false
		}
		runtime.Gosched()
	}
	checked := time.Now()
	for {
		v := atomic.LoadUint32(w)
		if v == 0 {
			// Taken after waiting: keep the bit set, others may sleep too.
			if atomic.CompareAndSwapUint32(w, 0, tag|contended) {
				return false
			}
			continue
		}
		if v&contended == 0 && !atomic.CompareAndSwapUint32(w, v, v|contended) {
			continue
		}
		futexSleep(w, v|contended, lockPoll)
		if time.Since(checked) < lockPoll {
			continue
		}
		checked = time.Now()
		if v = atomic.LoadUint32(w); v != 0 && v&^contended != tag && !g.tagAlive(v&^contended) {
			if atomic.CompareAndSwapUint32(w, v, tag|v&contended) {
				return true
			}
		}
	}
}

// unlockWord releases w.
func unlockWord(w *uint32) {
	if atomic.SwapUint32(w, 0)&contended != 0 {
		futexWakeOne(w)
	}
}
