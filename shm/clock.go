// The clocks: the monotonic clock that times waits, the coarse clock of TTL
// deadlines and expiry checks, and the LRU clock stamped on entries.

package shm

import (
	"sync/atomic"
	"time"
	_ "unsafe" // go:linkname

	"github.com/ephpm/ephpm/internal/coarse"
)

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// now is CLOCK_MONOTONIC in ns: the same clock in every process. It times
// waits (lock words, Wait's deadline).
func now() int64 { return nanotime() }

// expiryNow is CLOCK_MONOTONIC_COARSE in ns, the clock of TTL deadlines
// and expiry checks: the same clock in every process, behind now by a lag
// the kernel does not bound (a tick or more), and a few loads to read
// (internal/coarse).
func expiryNow() int64 { return coarse.Now() }

// tick is expiryNow's resolution: the kernel's tick.
var tick = coarse.Resolution()

// lruClock returns the coarse clock (ms) stamped on entries, advancing the
// segment's copy when t (a clock reading, 0: none) is newer.
func (s *Store) lruClock(t int64) uint32 {
	p := s.g.u32(hLRUClock)
	c := atomic.LoadUint32(p)
	if t != 0 {
		if ms := uint32(t / int64(time.Millisecond)); ms != c {
			atomic.StoreUint32(p, ms)
			return ms
		}
	}
	return c
}

// clockAt returns *t, reading the expiry clock into it first if it is
// unread (0): an operation reads the clock at most once, and only if it
// needs it (a TTL to set or compare).
func clockAt(t *int64) int64 {
	if *t == 0 {
		*t = expiryNow()
	}
	return *t
}

// expired reports whether an entry that expires at (0: never) has expired
// at *t, reading the clock into *t if it is needed and unread.
func expired(at int64, t *int64) bool { return at != 0 && at <= clockAt(t) }
