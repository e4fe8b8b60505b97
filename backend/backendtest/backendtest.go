// Package backendtest is the contract every backend.Backend must pass: the
// same assertions run against the in-process store and against Redis.
package backendtest

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/internal/barrier"
	"github.com/ephpm/ephpm/internal/coarse"
	"github.com/ephpm/ephpm/kv"
	"github.com/ephpm/ephpm/lockwait"
	"github.com/ephpm/ephpm/sessionkeys"
)

// A Clock is the clock a backend keeps its TTL deadlines and expiry checks
// on, as this test process reads it. The contract times TTLs on it, so
// that it asserts what the backend promises and nothing of how this host's
// clocks drift against each other.
type Clock struct {
	// Now reads the clock, in nanoseconds from any fixed origin.
	Now func() int64
	// Resolution is how far the backend's deadlines may lie from the
	// instants Now gives: 0 when Now reads the backend's own clock.
	Resolution time.Duration
}

// Coarse is the clock of ephpm's own stores, the in-process store and the
// shared-memory segment: CLOCK_MONOTONIC_COARSE, read as they read it
// (internal/coarse).
var Coarse = Clock{Now: coarse.Now}

// ServerMillis is the clock of a Redis or Valkey server on this machine: it
// keeps deadlines in whole milliseconds of the machine's time.
var ServerMillis = Clock{Now: sinceStart, Resolution: time.Millisecond}

var start = time.Now()

func sinceStart() int64 { return int64(time.Since(start)) }

// hangCatch bounds the waits for what must come (a lapse, a wake-up, a
// grant): it only catches a hang, never the host's pace (a loaded host
// under the race detector runs a goroutine or a round trip seconds late).
const hangCatch = 2 * time.Minute

// Run runs the contract against the backend b, whose TTLs are kept on
// clock. Keys are prefixed by test name, so b may be shared with other
// tests.
func Run(t *testing.T, b backend.Backend, clock Clock) {
	for _, c := range contract {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, b, strings.ReplaceAll(t.Name(), "/", ":")+":", clock)
		})
	}
}

var contract = []struct {
	name string
	run  func(t *testing.T, b backend.Backend, p string, clock Clock)
}{
	{"GetSetDel", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		n, found, err := b.GetInto(p+"k", nil)
		require.NoError(t, err)
		assert.False(t, found)
		require.NoError(t, b.Set(p+"k", []byte("hello"), 0))
		dst := make([]byte, 2)
		n, found, err = b.GetInto(p+"k", dst)
		require.NoError(t, err)
		assert.True(t, found)
		assert.Equal(t, 5, n, "too small: the length comes back")
		dst = make([]byte, 5)
		n, _, _ = b.GetInto(p+"k", dst)
		assert.Equal(t, "hello", string(dst[:n]))
		removed, err := b.Del(p + "k")
		require.NoError(t, err)
		assert.True(t, removed)
		removed, _ = b.Del(p + "k")
		assert.False(t, removed)
	}},
	{"BinarySafe", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		key, val := p+"a\x00b", []byte{0, 'x', 0, 255}
		require.NoError(t, b.Set(key, val, 0))
		dst := make([]byte, 8)
		n, found, err := b.GetInto(key, dst)
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, val, dst[:n])
		_, found, _ = b.GetInto(p+"a", dst)
		assert.False(t, found)
	}},
	{"TTL", func(t *testing.T, b backend.Backend, p string, clock Clock) {
		// PTTL is what is left: at most the TTL, and less by no more than
		// the time the write and the read took on the backend's clock.
		before := clock.Now()
		require.NoError(t, b.Set(p+"t", []byte("v"), 150*time.Millisecond))
		ttl, found, err := b.PTTL(p + "t")
		took := time.Duration(clock.Now() - before)
		require.NoError(t, err)
		assert.True(t, found)
		assert.LessOrEqual(t, ttl, 150*time.Millisecond+clock.Resolution)
		assert.GreaterOrEqual(t, ttl, 150*time.Millisecond-took-clock.Resolution, "the write and the read took %v", took)
		require.NoError(t, b.Set(p+"n", []byte("v"), 0))
		ttl, _, _ = b.PTTL(p + "n")
		assert.Equal(t, time.Duration(-1), ttl)
		_, found, _ = b.PTTL(p + "none")
		assert.False(t, found)
		time.Sleep(200 * time.Millisecond)
		ok, err := b.Exists(p + "t")
		require.NoError(t, err)
		assert.False(t, ok, "expired")
	}},
	{"TTLOnItsClock", func(t *testing.T, b backend.Backend, p string, clock Clock) {
		// An entry lives its TTL on the backend's clock, to that clock's
		// resolution against clock.Now. Each bound is read on the side a
		// scheduling delay cannot help: absence is timed from before the
		// write to after the check that saw it, presence from after the
		// write to before the check that saw it.
		const ttl = 30 * time.Millisecond
		early, late := int64(ttl-clock.Resolution), int64(ttl+clock.Resolution)
		for round := range 5 {
			key := fmt.Sprintf("%sttl%d", p, round)
			before := clock.Now()
			require.NoError(t, b.Set(key, []byte("v"), ttl))
			after := clock.Now()
			for {
				checking := clock.Now()
				ok, err := b.Exists(key)
				checked := clock.Now()
				require.NoError(t, err)
				if !ok {
					assert.GreaterOrEqual(t, checked-before, early, "round %d: gone before its TTL", round)
					break
				}
				assert.Less(t, checking-after, late, "round %d: alive after its TTL", round)
				if checked-before > late+int64(time.Second) {
					t.Fatalf("round %d: still there %v after its write, TTL %v", round, time.Duration(checked-before), ttl)
				}
				time.Sleep(200 * time.Microsecond)
			}
		}
	}},
	{"SetNXAndDelIfEq", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		out, err := b.SetNX(p+"l", []byte("A"), time.Minute)
		require.NoError(t, err)
		assert.Equal(t, kv.Inserted, out)
		out, _ = b.SetNX(p+"l", []byte("B"), time.Minute)
		assert.Equal(t, kv.Exists, out)
		ok, err := b.DelIfEq(p+"l", []byte("B"))
		require.NoError(t, err)
		assert.False(t, ok)
		ok, _ = b.DelIfEq(p+"l", []byte("A"))
		assert.True(t, ok)
	}},
	{"StaleRelease", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// A's lock expires, B takes it, A's late release must not remove it.
		out, _ := b.SetNX(p+"lock", []byte("A"), 100*time.Millisecond)
		require.Equal(t, kv.Inserted, out)
		time.Sleep(150 * time.Millisecond)
		out, _ = b.SetNX(p+"lock", []byte("B"), time.Minute)
		require.Equal(t, kv.Inserted, out)
		ok, err := b.DelIfEq(p+"lock", []byte("A"))
		require.NoError(t, err)
		assert.False(t, ok)
		out, _ = b.SetNX(p+"lock", []byte("C"), time.Minute)
		assert.Equal(t, kv.Exists, out)
	}},
	{"ExpireAndExpireIfEq", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		ok, err := b.Expire(p+"none", time.Second)
		require.NoError(t, err)
		assert.False(t, ok)
		require.NoError(t, b.Set(p+"k", []byte("tok"), 0))
		ok, _ = b.Expire(p+"k", time.Minute)
		assert.True(t, ok)
		ttl, _, _ := b.PTTL(p + "k")
		assert.Greater(t, ttl, 50*time.Second)
		ok, _ = b.Expire(p+"k", 0)
		assert.True(t, ok)
		ttl, _, _ = b.PTTL(p + "k")
		assert.Equal(t, time.Duration(-1), ttl, "0 removes the expiry")
		ok, _ = b.ExpireIfEq(p+"k", []byte("other"), time.Minute)
		assert.False(t, ok)
		ok, _ = b.ExpireIfEq(p+"k", []byte("tok"), time.Minute)
		assert.True(t, ok)
	}},
	{"IncrBy", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		n, err := b.IncrBy(p+"c", 5, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, int64(5), n)
		n, _ = b.IncrBy(p+"c", -7, 0)
		assert.Equal(t, int64(-2), n)
		ttl, _, _ := b.PTTL(p + "c")
		assert.Greater(t, ttl, 50*time.Second, "the TTL set on create stays")
		require.NoError(t, b.Set(p+"s", []byte("abc"), 0))
		_, err = b.IncrBy(p+"s", 1, 0)
		assert.ErrorIs(t, err, kv.ErrNotInteger)
		require.NoError(t, b.Set(p+"m", []byte("9223372036854775807"), 0))
		_, err = b.IncrBy(p+"m", 1, 0)
		assert.ErrorIs(t, err, kv.ErrOverflow)
	}},
	{"IncrByAnswersExactSumsAbove2To53", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// A counter's sum is exact over all of int64, with a TTL on create
		// or without (a Lua script holds integers as doubles: exact only
		// up to 2^53).
		for i, ttl := range []time.Duration{0, time.Minute} {
			key := fmt.Sprintf("%sbig%d", p, i)
			n, err := b.IncrBy(key, 1<<60+1, ttl)
			require.NoError(t, err)
			assert.Equal(t, int64(1<<60+1), n, "created, ttl %v", ttl)
			n, err = b.IncrBy(key, 2, ttl)
			require.NoError(t, err)
			assert.Equal(t, int64(1<<60+3), n, "incremented, ttl %v", ttl)
			dst := make([]byte, 32)
			m, _, _ := b.GetInto(key, dst)
			assert.Equal(t, "1152921504606846979", string(dst[:m]))
		}
	}},
	{"IncrByReadsIntegersAsRedisDoes", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// An integer is an optional '-' and digits without a leading zero
		// ("0" itself excepted), within int64: Redis's rule, which every
		// backend follows so that a counter means the same everywhere.
		for _, bad := range []string{"007", "00", "-0", "-01", "+1", " 1", "1 ", "", "-", "1.0", "0x10",
			"9223372036854775808", "-9223372036854775809"} {
			require.NoError(t, b.Set(p+"bad", []byte(bad), 0))
			_, err := b.IncrBy(p+"bad", 1, 0)
			assert.ErrorIs(t, err, kv.ErrNotInteger, "%q", bad)
			dst := make([]byte, 32)
			n, _, _ := b.GetInto(p+"bad", dst)
			assert.Equal(t, bad, string(dst[:n]), "%q is unchanged", bad)
		}
		for value, want := range map[string]int64{"0": 1, "-1": 0, "10": 11, "-9223372036854775808": -9223372036854775807} {
			require.NoError(t, b.Set(p+"good", []byte(value), 0))
			n, err := b.IncrBy(p+"good", 1, 0)
			require.NoError(t, err, "%q", value)
			assert.Equal(t, want, n, "%q", value)
		}
	}},
	{"EmptyTokenMatchesOnlyAnEmptyValue", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// "Equal to token" holds for an empty token as for any other: it
		// matches a live empty value, and nothing else.
		require.NoError(t, b.Set(p+"empty", []byte{}, 0))
		require.NoError(t, b.Set(p+"full", []byte("x"), 0))
		ok, err := b.ExpireIfEq(p+"empty", []byte{}, time.Minute)
		require.NoError(t, err)
		assert.True(t, ok, "an empty value equals an empty token")
		ttl, _, _ := b.PTTL(p + "empty")
		assert.Greater(t, ttl, 50*time.Second)
		ok, err = b.ExpireIfEq(p+"full", []byte{}, time.Minute)
		require.NoError(t, err)
		assert.False(t, ok)
		ok, err = b.ExpireIfEq(p+"none", []byte{}, time.Minute)
		require.NoError(t, err)
		assert.False(t, ok, "no entry equals any token")
		ttl, _, _ = b.PTTL(p + "full")
		assert.Equal(t, time.Duration(-1), ttl, "a mismatch changes nothing")
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		require.NoError(t, b.Set(lock, []byte{}, time.Minute))
		ok, err = backend.SetGuarded(b, data, []byte("v"), time.Minute, lock, []byte{})
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = b.DelIfEq(p+"full", []byte{})
		require.NoError(t, err)
		assert.False(t, ok)
		ok, err = b.DelIfEq(p+"empty", []byte{})
		require.NoError(t, err)
		assert.True(t, ok)
	}},
	{"SetGuarded", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		ok, err := backend.SetGuarded(b, data, []byte("v1"), time.Minute, lock, []byte("tok"))
		require.NoError(t, err)
		assert.False(t, ok, "no lock")
		_, err = b.SetNX(lock, []byte("tok"), time.Minute)
		require.NoError(t, err)
		ok, _ = backend.SetGuarded(b, data, []byte("v1"), time.Minute, lock, []byte("bad"))
		assert.False(t, ok)
		ok, _ = backend.SetGuarded(b, data, []byte("v1"), time.Minute, lock, []byte("tok"))
		assert.True(t, ok)
		dst := make([]byte, 8)
		n, _, _ := b.GetInto(data, dst)
		assert.Equal(t, "v1", string(dst[:n]))
	}},
	{"DelGuarded", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		require.NoError(t, b.Set(data, []byte("v1"), time.Minute))
		held, err := backend.DelGuarded(b, data, lock, []byte("tok"))
		require.NoError(t, err)
		assert.False(t, held, "no lock")
		_, err = b.SetNX(lock, []byte("tok"), time.Minute)
		require.NoError(t, err)
		held, _ = backend.DelGuarded(b, data, lock, []byte("bad"))
		assert.False(t, held, "another holder's lock")
		found, _ := b.Exists(data)
		assert.True(t, found, "a refused delete changes nothing")
		held, _ = backend.DelGuarded(b, data, lock, []byte("tok"))
		assert.True(t, held)
		found, _ = b.Exists(data)
		assert.False(t, found, "deleted")
		held, _ = backend.DelGuarded(b, data, lock, []byte("tok"))
		assert.True(t, held, "nothing to delete: the guard still held")
		found, _ = b.Exists(lock)
		assert.True(t, found, "the lock is left to its holder")
	}},
	{"SetNXGet", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		dst := make([]byte, 8)
		out, n, found, err := backend.SetNXGet(b, lock, []byte("tok"), time.Minute, data, dst)
		require.NoError(t, err)
		assert.Equal(t, kv.Inserted, out)
		assert.False(t, found, "no data yet")
		assert.Equal(t, 0, n)
		ttl, held, _ := b.PTTL(lock)
		assert.True(t, held)
		assert.Greater(t, ttl, 50*time.Second, "the lock has its TTL")

		require.NoError(t, b.Set(data, []byte("v1"), time.Minute))
		out, _, found, err = backend.SetNXGet(b, lock, []byte("other"), time.Minute, data, dst)
		require.NoError(t, err)
		assert.Equal(t, kv.Exists, out, "held")
		assert.False(t, found, "nothing read without the lock")
		ok, _ := b.DelIfEq(lock, []byte("tok"))
		require.True(t, ok)

		out, n, found, err = backend.SetNXGet(b, lock, []byte("tok2"), 0, data, dst)
		require.NoError(t, err)
		assert.Equal(t, kv.Inserted, out)
		assert.True(t, found)
		assert.Equal(t, "v1", string(dst[:n]))
		ttl, _, _ = b.PTTL(lock)
		assert.Equal(t, time.Duration(-1), ttl, "0: no TTL")
		b.DelIfEq(lock, []byte("tok2"))

		small := []byte("xy")
		out, n, found, err = backend.SetNXGet(b, lock, []byte("tok3"), time.Minute, data, small)
		require.NoError(t, err)
		assert.Equal(t, kv.Inserted, out)
		assert.True(t, found)
		assert.Equal(t, 2, n, "fits exactly")
		require.NoError(t, b.Set(data, []byte("longer"), time.Minute))
		b.DelIfEq(lock, []byte("tok3"))
		copy(small, "xy")
		out, n, found, _ = backend.SetNXGet(b, lock, []byte("tok4"), time.Minute, data, small)
		assert.Equal(t, kv.Inserted, out)
		assert.True(t, found)
		assert.Equal(t, 6, n, "too small: the length comes back")
		assert.Equal(t, "xy", string(small), "and nothing is copied")
		require.NoError(t, b.Set(data, []byte{}, time.Minute))
		b.DelIfEq(lock, []byte("tok4"))
		out, n, found, _ = backend.SetNXGet(b, lock, []byte("tok5"), time.Minute, data, dst)
		assert.Equal(t, kv.Inserted, out)
		assert.True(t, found, "an empty value is a value")
		assert.Equal(t, 0, n)
	}},
	{"SetNXGetRaceHasOneWinner", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// Odd rounds through SetNXGetFenced, whose winner has a fence too.
		for round := 0; round < 20; round++ {
			sid := fmt.Sprintf("%ssid%d", p, round)
			data, lock := sessionkeys.DataKey(sid), sessionkeys.LockKey(sid)
			require.NoError(t, b.Set(data, []byte("v"), time.Minute))
			wins := barrier.Race(16, func(i int) bool {
				dst := make([]byte, 4)
				var out kv.SetNXOutcome
				var n int
				var found bool
				var err error
				fence := int64(1)
				if round%2 == 1 {
					out, n, found, fence, err = backend.SetNXGetFenced(b, lock, []byte(fmt.Sprint(i)), time.Minute, data, dst)
				} else {
					out, n, found, err = backend.SetNXGet(b, lock, []byte(fmt.Sprint(i)), time.Minute, data, dst)
				}
				if err != nil {
					t.Error(err)
					return false
				}
				if out == kv.Inserted && (!found || string(dst[:n]) != "v" || fence <= 0) {
					t.Errorf("the winner read %q (found %v), fence %d", dst[:n], found, fence)
				}
				return out == kv.Inserted
			})
			require.Equal(t, 1, wins, "round %d", round)
		}
	}},
	{"SetGuardedRelease", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		require.NoError(t, b.Set(data, []byte("v0"), time.Minute))
		ok, err := backend.SetGuardedRelease(b, data, []byte("v1"), time.Minute, lock, []byte("tok"))
		require.NoError(t, err)
		assert.False(t, ok, "no lock")
		_, err = b.SetNX(lock, []byte("tok"), time.Minute)
		require.NoError(t, err)
		ok, _ = backend.SetGuardedRelease(b, data, []byte("v1"), time.Minute, lock, []byte("bad"))
		assert.False(t, ok, "another holder's lock")
		dst := make([]byte, 8)
		n, _, _ := b.GetInto(data, dst)
		assert.Equal(t, "v0", string(dst[:n]), "a refused write changes nothing")
		held, _ := b.Exists(lock)
		assert.True(t, held, "nor releases")

		ok, err = backend.SetGuardedRelease(b, data, []byte("v1"), 30*time.Second, lock, []byte("tok"))
		require.NoError(t, err)
		assert.True(t, ok)
		n, _, _ = b.GetInto(data, dst)
		assert.Equal(t, "v1", string(dst[:n]))
		ttl, _, _ := b.PTTL(data)
		assert.Greater(t, ttl, 20*time.Second)
		assert.LessOrEqual(t, ttl, 30*time.Second, "the write's TTL")
		held, _ = b.Exists(lock)
		assert.False(t, held, "released")
		ok, _ = backend.SetGuardedRelease(b, data, []byte("v2"), time.Minute, lock, []byte("tok"))
		assert.False(t, ok, "released once: the guard is gone")
	}},
	{"ExpireGuardedRelease", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		require.NoError(t, b.Set(data, []byte("v0"), time.Minute))
		ok, err := backend.ExpireGuardedRelease(b, data, 2*time.Minute, lock, []byte("tok"))
		require.NoError(t, err)
		assert.False(t, ok, "no lock")
		_, err = b.SetNX(lock, []byte("tok"), time.Minute)
		require.NoError(t, err)
		ok, _ = backend.ExpireGuardedRelease(b, data, 2*time.Minute, lock, []byte("bad"))
		assert.False(t, ok, "another holder's lock")
		ok, _ = backend.ExpireGuardedRelease(b, data, 2*time.Minute, lock, []byte("to"))
		assert.False(t, ok, "a token's prefix is another token")
		ttl, _, _ := b.PTTL(data)
		assert.LessOrEqual(t, ttl, time.Minute, "a refused refresh changes nothing")
		held, _ := b.Exists(lock)
		assert.True(t, held, "nor releases")
		empty, emptyLock := sessionkeys.DataKey(p+"none"), sessionkeys.LockKey(p+"none")
		_, err = b.SetNX(emptyLock, []byte("tok"), time.Minute)
		require.NoError(t, err)
		ok, err = backend.ExpireGuardedRelease(b, empty, 2*time.Minute, emptyLock, []byte("tok"))
		require.NoError(t, err)
		assert.False(t, ok, "no data to refresh")
		held, _ = b.Exists(emptyLock)
		assert.True(t, held, "and the lock is kept")

		ok, err = backend.ExpireGuardedRelease(b, data, 2*time.Minute, lock, []byte("tok"))
		require.NoError(t, err)
		assert.True(t, ok)
		dst := make([]byte, 8)
		n, _, _ := b.GetInto(data, dst)
		assert.Equal(t, "v0", string(dst[:n]), "the value is kept")
		ttl, _, _ = b.PTTL(data)
		assert.Greater(t, ttl, time.Minute, "the new TTL")
		held, _ = b.Exists(lock)
		assert.False(t, held, "released")
		ok, _ = backend.ExpireGuardedRelease(b, data, time.Minute, lock, []byte("tok"))
		assert.False(t, ok, "released once: the guard is gone")
	}},
	{"SetGuardedReleaseWakesAWaiter", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		_, err := b.SetNX(lock, []byte("tok"), time.Hour) // past wokenByRelease's bound: only the release frees it
		require.NoError(t, err)
		wokenByRelease(t, b, lock, func() (bool, error) {
			return backend.SetGuardedRelease(b, data, []byte("v"), time.Minute, lock, []byte("tok"))
		})
	}},
	{"DelGuardedRefusesAnExpiredGuard", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		require.NoError(t, b.Set(data, []byte("v1"), time.Minute))
		_, err := b.SetNX(lock, []byte("tok"), 20*time.Millisecond)
		require.NoError(t, err)
		require.Eventually(t, func() bool { ok, _ := b.Exists(lock); return !ok }, hangCatch, 5*time.Millisecond)
		held, err := backend.DelGuarded(b, data, lock, []byte("tok"))
		require.NoError(t, err)
		assert.False(t, held, "an expired lock never matches")
		found, _ := b.Exists(data)
		assert.True(t, found)
	}},
	{"WaitWakesOnRelease", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		free, err := b.Wait(p+"free", time.Second)
		require.NoError(t, err)
		assert.True(t, free)
		// Held for an hour, waited for 10 minutes: only the release ends the
		// wait within hangCatch (a hang catch, not a speed bound).
		_, err = b.SetNX(p+"w", []byte("tok"), time.Hour)
		require.NoError(t, err)
		free, _ = b.Wait(p+"w", 30*time.Millisecond)
		assert.False(t, free, "still held after the timeout")
		done := make(chan time.Duration)
		go func() {
			start := time.Now()
			free, err := b.Wait(p+"w", 5*hangCatch)
			assert.NoError(t, err)
			assert.True(t, free)
			done <- time.Since(start)
		}()
		time.Sleep(100 * time.Millisecond) // let it subscribe and block
		ok, _ := b.DelIfEq(p+"w", []byte("tok"))
		require.True(t, ok)
		assert.Less(t, <-done, hangCatch, "woken by the release, not the timeout")
	}},
	{"SetNXRaceOneWinner", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		for r := 0; r < 20; r++ {
			key := fmt.Sprintf("%srace:%d", p, r)
			wins := barrier.Race(32, func(i int) bool {
				out, err := b.SetNX(key, []byte(fmt.Sprint(i)), time.Minute)
				assert.NoError(t, err)
				return out == kv.Inserted
			})
			require.Equal(t, 1, wins, "round %d", r)
		}
	}},
	{"LockerThroughBackend", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// 20 requests on one session through the real acquisition loop.
		l := &lockwait.Locker{Store: b}
		data, lock := sessionkeys.DataKey(p+"s"), sessionkeys.LockKey(p+"s")
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tok, _ := sessionkeys.NewToken()
				res, err := l.Acquire(lock, []byte(tok), time.Minute, time.Minute)
				if !assert.NoError(t, err) || !assert.True(t, res.Acquired) {
					return
				}
				dst := make([]byte, 64)
				n, _, _ := b.GetInto(data, dst)
				ok, err := backend.SetGuarded(b, data, append(dst[:n:n], 'x'), time.Minute, lock, []byte(tok))
				assert.NoError(t, err)
				assert.True(t, ok)
				ok, _ = b.DelIfEq(lock, []byte(tok))
				assert.True(t, ok)
			}()
		}
		wg.Wait()
		dst := make([]byte, 64)
		n, _, _ := b.GetInto(data, dst)
		assert.Equal(t, 20, n)
	}},
	{"GetManySetMany", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		keys := []string{p + "m:a", p + "m:\x00b", p + "m:none", p + "m:empty", p + "m:a"}
		stored, err := b.SetMany(keys[:2], [][]byte{[]byte("alpha"), {0, 'x', 0}}, 0)
		require.NoError(t, err)
		assert.Equal(t, 2, stored)
		stored, err = b.SetMany([]string{p + "m:empty"}, [][]byte{{}}, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, 1, stored)
		dst := make([]byte, 256)
		n, err := b.GetMany(keys, dst)
		require.NoError(t, err)
		values, found := DecodeRecords(t, dst[:n], len(keys))
		assert.Equal(t, []bool{true, true, false, true, true}, found)
		assert.Equal(t, "alpha", string(values[0]))
		assert.Equal(t, []byte{0, 'x', 0}, values[1])
		assert.Equal(t, "", string(values[3]))
		assert.Equal(t, "alpha", string(values[4]), "a key asked twice answers twice")
		ttl, _, _ := b.PTTL(p + "m:empty")
		assert.Greater(t, ttl, 50*time.Second, "the batch's TTL applies to every entry")

		small := make([]byte, n-1)
		need, err := b.GetMany(keys, small)
		require.NoError(t, err)
		assert.Equal(t, n, need, "too small: the length comes back")
		need, err = b.GetMany(keys, nil)
		require.NoError(t, err)
		assert.Equal(t, n, need)
		need, err = b.GetMany(nil, dst)
		require.NoError(t, err)
		assert.Equal(t, 0, need, "an empty batch")

		stored, err = b.SetMany([]string{p + "m:a", p + "m:a"}, [][]byte{[]byte("1"), []byte("2")}, 0)
		require.NoError(t, err)
		assert.Equal(t, 2, stored)
		n, _ = b.GetMany([]string{p + "m:a"}, dst)
		values, _ = DecodeRecords(t, dst[:n], 1)
		assert.Equal(t, "2", string(values[0]), "a key given twice ends with its later value")
	}},
	{"SetManyRefusesABadBatchWhole", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		for name, keys := range map[string][]string{
			"empty key":   {p + "r:1", "", p + "r:3"},
			"long key":    {p + "r:1", strings.Repeat("k", kv.MaxKeyLen+1), p + "r:3"},
			"short count": {p + "r:1", p + "r:2"},
		} {
			values := [][]byte{[]byte("1"), []byte("2"), []byte("3")}
			stored, err := b.SetMany(keys, values, 0)
			assert.ErrorIs(t, err, kv.ErrInvalidArgument, name)
			assert.Equal(t, 0, stored, name)
			for _, k := range []string{p + "r:1", p + "r:2", p + "r:3"} {
				found, _ := b.Exists(k)
				assert.False(t, found, "%s: nothing written (%s)", name, k)
			}
		}
		_, err := b.SetMany([]string{p + "r:1"}, [][]byte{[]byte("1")}, -time.Second)
		assert.ErrorIs(t, err, kv.ErrInvalidArgument, "negative TTL")
	}},
	{"FencesIncreaseWithEveryGrant", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		lock := p + "lock"
		f, err := b.Fence(lock)
		require.NoError(t, err)
		assert.Zero(t, f, "never granted")
		out, f1, err := backend.SetNXFenced(b, lock, []byte("a"), time.Minute)
		require.NoError(t, err)
		require.Equal(t, kv.Inserted, out)
		assert.Positive(t, f1)
		f, _ = b.Fence(lock)
		assert.Equal(t, f1, f)
		out, f, err = backend.SetNXFenced(b, lock, []byte("b"), time.Minute)
		require.NoError(t, err)
		assert.Equal(t, kv.Exists, out)
		assert.Zero(t, f, "no grant, no fence")
		f, _ = b.Fence(lock)
		assert.Equal(t, f1, f, "a refused grant mints nothing")
		ok, _ := b.DelIfEq(lock, []byte("a"))
		require.True(t, ok)
		f, _ = b.Fence(lock)
		assert.Equal(t, f1, f, "the release keeps the fence")
		_, f2, err := backend.SetNXFenced(b, lock, []byte("c"), 20*time.Millisecond)
		require.NoError(t, err)
		assert.Greater(t, f2, f1)
		require.Eventually(t, func() bool { ok, _ := b.Exists(lock); return !ok }, hangCatch, 5*time.Millisecond)
		f, _ = b.Fence(lock)
		assert.Equal(t, f2, f, "expiry keeps the fence")
		_, f3, _ := backend.SetNXFenced(b, lock, []byte("d"), time.Minute)
		assert.Greater(t, f3, f2)
		b.DelIfEq(lock, []byte("d"))
		_, err = b.SetNX(lock, []byte("e"), time.Minute)
		require.NoError(t, err)
		f, _ = b.Fence(lock)
		assert.Equal(t, f3, f, "a plain SetNX mints no fence")
		other, _ := b.Fence(p + "other")
		assert.Zero(t, other, "each name has its own fence")
	}},
	{"SetFencedRefusesAStaleFence", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// One hash tag: in a Cluster the key and the lock share a slot.
		key, lock := "{"+p+"res}:data", "{"+p+"res}:lock"
		_, fa, err := backend.SetNXFenced(b, lock, []byte("a"), 20*time.Millisecond)
		require.NoError(t, err)
		ok, err := backend.SetFenced(b, key, []byte("by a"), 0, lock, fa)
		require.NoError(t, err)
		assert.True(t, ok, "the latest grant writes")
		require.Eventually(t, func() bool { ok, _ := b.Exists(lock); return !ok }, hangCatch, 5*time.Millisecond)
		ok, _ = backend.SetFenced(b, key, []byte("by a, late"), 0, lock, fa)
		assert.True(t, ok, "expired, but nobody was granted since: still the latest")
		_, fb, err := backend.SetNXFenced(b, lock, []byte("b"), time.Minute)
		require.NoError(t, err)
		ok, err = backend.SetFenced(b, key, []byte("stale"), 0, lock, fa)
		require.NoError(t, err)
		assert.False(t, ok, "a grant since: a's fence is stale")
		dst := make([]byte, 32)
		n, _, _ := b.GetInto(key, dst)
		assert.Equal(t, "by a, late", string(dst[:n]), "a refused write changes nothing")
		ok, _ = backend.SetFenced(b, key, []byte("by b"), time.Minute, lock, fb)
		assert.True(t, ok)
		ttl, found, _ := b.PTTL(key)
		assert.True(t, found)
		assert.Greater(t, ttl, time.Duration(0), "the TTL is applied")
		ok, _ = backend.SetFenced(b, key, []byte("future"), 0, lock, fb+1)
		assert.False(t, ok, "a fence never granted")
		ok, _ = backend.SetFenced(b, key, []byte("x"), 0, "{"+p+"res}:never", 1)
		assert.False(t, ok, "a lock never granted")
		_, err = backend.SetFenced(b, key, []byte("x"), 0, lock, 0)
		assert.ErrorIs(t, err, kv.ErrInvalidArgument)
		n, _, _ = b.GetInto(key, dst)
		assert.Equal(t, "by b", string(dst[:n]))
	}},
	{"DelFencedRefusesAStaleFence", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		key, lock := "{"+p+"res}:data", "{"+p+"res}:lock"
		require.NoError(t, b.Set(key, []byte("v"), time.Minute))
		held, err := backend.DelFenced(b, key, lock, 1)
		require.NoError(t, err)
		assert.False(t, held, "a lock never granted")
		_, fa, err := backend.SetNXFenced(b, lock, []byte("a"), time.Minute)
		require.NoError(t, err)
		b.DelIfEq(lock, []byte("a"))
		_, fb, err := backend.SetNXFenced(b, lock, []byte("b"), time.Minute)
		require.NoError(t, err)
		held, _ = backend.DelFenced(b, key, lock, fa)
		assert.False(t, held, "a stale fence")
		found, _ := b.Exists(key)
		assert.True(t, found, "a refused delete changes nothing")
		held, _ = backend.DelFenced(b, key, lock, fb)
		assert.True(t, held)
		found, _ = b.Exists(key)
		assert.False(t, found, "deleted")
		held, _ = backend.DelFenced(b, key, lock, fb)
		assert.True(t, held, "nothing to delete: the fence still held")
		found, _ = b.Exists(lock)
		assert.True(t, found, "the lock is left to its holder")
		_, err = backend.DelFenced(b, key, lock, 0)
		assert.ErrorIs(t, err, kv.ErrInvalidArgument)
	}},
	{"SetNXGetFenced", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		dst := make([]byte, 8)
		out, n, found, f1, err := backend.SetNXGetFenced(b, lock, []byte("tok"), time.Minute, data, dst)
		require.NoError(t, err)
		assert.Equal(t, kv.Inserted, out)
		assert.False(t, found, "no data yet")
		assert.Zero(t, n)
		assert.Positive(t, f1)
		ttl, held, _ := b.PTTL(lock)
		assert.True(t, held)
		assert.Greater(t, ttl, 50*time.Second, "the lock has its TTL")
		latest, _ := b.Fence(lock)
		assert.Equal(t, f1, latest)

		require.NoError(t, b.Set(data, []byte("v1"), time.Minute))
		out, n, found, f, err := backend.SetNXGetFenced(b, lock, []byte("other"), time.Minute, data, dst)
		require.NoError(t, err)
		assert.Equal(t, kv.Exists, out, "held")
		assert.False(t, found, "nothing read without the lock")
		assert.Zero(t, f, "no grant, no fence")
		b.DelIfEq(lock, []byte("tok"))

		_, f2, err := backend.SetNXFenced(b, lock, []byte("tok2"), time.Minute)
		require.NoError(t, err)
		assert.Greater(t, f2, f1, "one sequence with SetNXFenced")
		b.DelIfEq(lock, []byte("tok2"))

		out, n, found, f3, err := backend.SetNXGetFenced(b, lock, []byte("tok3"), 0, data, dst)
		require.NoError(t, err)
		assert.Equal(t, kv.Inserted, out)
		assert.True(t, found)
		assert.Equal(t, "v1", string(dst[:n]))
		assert.Greater(t, f3, f2)
		ttl, _, _ = b.PTTL(lock)
		assert.Equal(t, time.Duration(-1), ttl, "0: no TTL")
		b.DelIfEq(lock, []byte("tok3"))

		// A value that fills dst exactly, and one longer than dst.
		require.NoError(t, b.Set(data, []byte("12345678"), time.Minute))
		out, n, found, _, _ = backend.SetNXGetFenced(b, lock, []byte("tok4"), time.Minute, data, dst)
		assert.Equal(t, kv.Inserted, out)
		assert.True(t, found)
		assert.Equal(t, "12345678", string(dst[:n]), "fits exactly")
		b.DelIfEq(lock, []byte("tok4"))
		require.NoError(t, b.Set(data, []byte("longer than 8"), time.Minute))
		copy(dst, "unread..")
		out, n, found, f5, _ := backend.SetNXGetFenced(b, lock, []byte("tok5"), time.Minute, data, dst)
		assert.Equal(t, kv.Inserted, out)
		assert.True(t, found)
		assert.Equal(t, 13, n, "too small: the length comes back")
		assert.Equal(t, "unread..", string(dst), "and nothing is copied")
		assert.Positive(t, f5)
		b.DelIfEq(lock, []byte("tok5"))
		require.NoError(t, b.Set(data, []byte{}, time.Minute))
		out, n, found, _, _ = backend.SetNXGetFenced(b, lock, []byte("tok6"), time.Minute, data, dst)
		assert.Equal(t, kv.Inserted, out)
		assert.True(t, found, "an empty value is a value")
		assert.Zero(t, n)
	}},
	{"SetFencedReleaseKeepsAnOverrunWithoutContender", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		dst := make([]byte, 16)
		_, _, _, fa, err := backend.SetNXGetFenced(b, lock, []byte("a"), 20*time.Millisecond, data, dst)
		require.NoError(t, err)
		require.Eventually(t, func() bool { ok, _ := b.Exists(lock); return !ok }, hangCatch, 5*time.Millisecond)
		ok, err := backend.SetFencedRelease(b, data, []byte("by a"), time.Minute, lock, fa, []byte("a"))
		require.NoError(t, err)
		assert.True(t, ok, "expired, but nobody was granted since: written")
		n, _, _ := b.GetInto(data, dst)
		assert.Equal(t, "by a", string(dst[:n]))
		ttl, _, _ := b.PTTL(data)
		assert.Greater(t, ttl, 50*time.Second, "the write's TTL")

		_, _, _, fb, err := backend.SetNXGetFenced(b, lock, []byte("b"), time.Minute, data, dst)
		require.NoError(t, err)
		ok, err = backend.SetFencedRelease(b, data, []byte("by b"), 30*time.Second, lock, fb, []byte("b"))
		require.NoError(t, err)
		assert.True(t, ok, "in time")
		held, _ := b.Exists(lock)
		assert.False(t, held, "and released")
		n, _, _ = b.GetInto(data, dst)
		assert.Equal(t, "by b", string(dst[:n]))
		ok, _ = backend.SetFencedRelease(b, data, []byte("again"), 0, lock, fb, []byte("b"))
		assert.True(t, ok, "released, nobody granted since: the fence still holds")

		ok, _ = backend.DelFencedRelease(b, data, lock, fb, []byte("b"))
		assert.True(t, ok)
		found, _ := b.Exists(data)
		assert.False(t, found, "removed")
		ok, _ = backend.DelFencedRelease(b, data, lock, fb, []byte("b"))
		assert.True(t, ok, "nothing to remove: the fence still held")
		_, err = backend.SetFencedRelease(b, data, []byte("x"), 0, lock, 0, []byte("b"))
		assert.ErrorIs(t, err, kv.ErrInvalidArgument)
		_, err = backend.DelFencedRelease(b, data, lock, -1, []byte("b"))
		assert.ErrorIs(t, err, kv.ErrInvalidArgument)
	}},
	{"FencedReleaseRefusesAfterAnotherGrant", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		dst := make([]byte, 16)
		for _, del := range []bool{false, true} {
			sid := fmt.Sprintf("%ssid-%v", p, del)
			data, lock := sessionkeys.DataKey(sid), sessionkeys.LockKey(sid)
			release := func(fence int64, token string) bool {
				var ok bool
				var err error
				if del {
					ok, err = backend.DelFencedRelease(b, data, lock, fence, []byte(token))
				} else {
					ok, err = backend.SetFencedRelease(b, data, []byte("by "+token), time.Minute, lock, fence, []byte(token))
				}
				require.NoError(t, err)
				return ok
			}
			stays := func(value, holder string) {
				t.Helper()
				n, _, _ := b.GetInto(data, dst)
				assert.Equal(t, value, string(dst[:n]), "a refused call changes nothing")
				n, found, _ := b.GetInto(lock, dst)
				assert.True(t, found, "nor releases")
				assert.Equal(t, holder, string(dst[:n]))
			}

			// b is granted the expired lock (fenced): a's fence is stale.
			_, _, _, fa, err := backend.SetNXGetFenced(b, lock, []byte("a"), 20*time.Millisecond, data, dst)
			require.NoError(t, err)
			require.Eventually(t, func() bool { ok, _ := b.Exists(lock); return !ok }, hangCatch, 5*time.Millisecond)
			_, _, _, fb, err := backend.SetNXGetFenced(b, lock, []byte("b"), time.Minute, data, dst)
			require.NoError(t, err)
			require.NoError(t, b.Set(data, []byte("by b"), time.Minute))
			assert.False(t, release(fa, "a"), "granted to b since")
			stays("by b", "b")
			assert.False(t, release(fb, "a"), "b's fence with another token: b holds the lock")
			stays("by b", "b")
			b.DelIfEq(lock, []byte("b"))
			assert.False(t, release(fa, "a"), "b released: a's fence stays stale")

			// c's lock expires and d takes it with a grant that mints no
			// fence (set_nx): the fence is still c's, but d holds the lock.
			_, _, _, fc, err := backend.SetNXGetFenced(b, lock, []byte("c"), 20*time.Millisecond, data, dst)
			require.NoError(t, err)
			require.Eventually(t, func() bool { ok, _ := b.Exists(lock); return !ok }, hangCatch, 5*time.Millisecond)
			out, err := b.SetNX(lock, []byte("d"), time.Minute)
			require.NoError(t, err)
			require.Equal(t, kv.Inserted, out)
			require.NoError(t, b.Set(data, []byte("by d"), time.Minute))
			assert.False(t, release(fc, "c"), "d holds the lock")
			stays("by d", "d")
		}
	}},
	{"FencedReleaseWakesAWaiter", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		for _, del := range []bool{false, true} {
			sid := fmt.Sprintf("%ssid-%v", p, del)
			data, lock := sessionkeys.DataKey(sid), sessionkeys.LockKey(sid)
			_, fence, err := backend.SetNXFenced(b, lock, []byte("tok"), time.Hour)
			require.NoError(t, err)
			wokenByRelease(t, b, lock, func() (bool, error) {
				if del {
					return backend.DelFencedRelease(b, data, lock, fence, []byte("tok"))
				}
				return backend.SetFencedRelease(b, data, []byte("v"), time.Minute, lock, fence, []byte("tok"))
			})
		}
	}},
	{"FencesStrictlyIncreaseUnderContention", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// 16 callers at a barrier take one lock 25 times each; under the
		// lock, each grant's fence must exceed the one before it.
		lock := p + "hot"
		l := &lockwait.Locker{Store: b}
		var mu sync.Mutex
		last, grants := int64(0), 0
		barrier.Race(16, func(i int) bool {
			for r := 0; r < 25; r++ {
				tok := []byte(fmt.Sprintf("%d:%d", i, r))
				res, f, err := l.AcquireFenced(b, lock, tok, time.Minute, time.Minute)
				if !assert.NoError(t, err) || !assert.True(t, res.Acquired) {
					return false
				}
				mu.Lock()
				assert.Greater(t, f, last, "grant %d", grants)
				last = f
				grants++
				mu.Unlock()
				ok, _ := b.DelIfEq(lock, tok)
				assert.True(t, ok)
			}
			return true
		})
		assert.Equal(t, 400, grants)
		f, _ := b.Fence(lock)
		assert.Equal(t, last, f)
	}},
	{"ReadLocksShareAndAWriterWaitsForThem", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// One hash tag: in a Cluster the lock and the fenced write share a slot.
		lock := "{" + p + "rw}"
		release, _ := lockCalls(t, b, lock)
		mode, holders, err := b.LockInfo(lock)
		require.NoError(t, err)
		assert.Equal(t, kv.LockExclusive, mode)
		assert.Zero(t, holders, "free")
		out, f1, err := b.LockAttempt(lock, []byte("r1"), kv.LockShared, time.Minute, 0)
		require.NoError(t, err)
		require.Equal(t, kv.Inserted, out)
		assert.Positive(t, f1)
		out, f2, err := b.LockAttempt(lock, []byte("r2"), kv.LockShared, time.Minute, 0)
		require.NoError(t, err)
		require.Equal(t, kv.Inserted, out, "readers share")
		assert.Greater(t, f2, f1, "every grant mints")
		mode, holders, _ = b.LockInfo(lock)
		assert.Equal(t, kv.LockShared, mode)
		assert.Equal(t, 2, holders)
		out, f, err := b.LockAttempt(lock, []byte("w"), kv.LockExclusive, time.Minute, 0)
		require.NoError(t, err)
		assert.Equal(t, kv.Exists, out, "a writer is refused while readers hold")
		assert.Zero(t, f, "no grant, no fence")
		out, _, _ = b.LockAttempt(lock, []byte("r3"), kv.LockShared, time.Minute, 0)
		assert.Equal(t, kv.Inserted, out, "without a claim readers still enter")
		require.True(t, release("r3"))
		out, _, err = b.LockAttempt(lock, []byte("w"), kv.LockExclusive, time.Minute, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, kv.Exists, out)
		out, _, err = b.LockAttempt(lock, []byte("r4"), kv.LockShared, time.Minute, 0)
		require.NoError(t, err)
		assert.Equal(t, kv.Exists, out, "the waiting writer's claim refuses new readers")
		ok, err := b.LockRelease(lock, []byte("nobody"))
		require.NoError(t, err)
		assert.False(t, ok, "a token that holds nothing releases nothing")
		assert.True(t, release("r1"))
		assert.False(t, release("r1"), "released once")
		_, holders, _ = b.LockInfo(lock)
		assert.Equal(t, 1, holders)
		out, _, _ = b.LockAttempt(lock, []byte("w"), kv.LockExclusive, time.Minute, time.Minute)
		assert.Equal(t, kv.Exists, out, "one reader left")
		assert.True(t, release("r2"))
		mode, holders, _ = b.LockInfo(lock)
		assert.Equal(t, kv.LockExclusive, mode)
		assert.Zero(t, holders, "a claim alone holds nothing")
		out, f3, err := b.LockAttempt(lock, []byte("w"), kv.LockExclusive, time.Minute, time.Minute)
		require.NoError(t, err)
		require.Equal(t, kv.Inserted, out, "the last reader's release lets the writer in")
		assert.Greater(t, f3, f2)
		dst := make([]byte, 8)
		n, _, _ := b.GetInto(lock, dst)
		assert.Equal(t, "w", string(dst[:n]), "held exclusively: the token, as set_nx leaves it")
		mode, holders, _ = b.LockInfo(lock)
		assert.Equal(t, kv.LockExclusive, mode)
		assert.Equal(t, 1, holders)
		out, _, _ = b.LockAttempt(lock, []byte("r5"), kv.LockShared, time.Minute, 0)
		assert.Equal(t, kv.Exists, out, "no reader while a writer holds")
		out, _, _ = b.LockAttempt(lock, []byte("w2"), kv.LockExclusive, time.Minute, time.Minute)
		assert.Equal(t, kv.Exists, out, "one writer")
		out, _ = b.SetNX(lock, []byte("x"), time.Minute)
		assert.Equal(t, kv.Exists, out)
		assert.True(t, release("w"))
		_, holders, _ = b.LockInfo(lock)
		assert.Zero(t, holders)
		got, _ := b.Fence(lock)
		assert.Equal(t, f3, got, "Fence reads lock_acquire's grants")
		out, f4, err := backend.SetNXFenced(b, lock, []byte("s"), time.Minute)
		require.NoError(t, err)
		require.Equal(t, kv.Inserted, out)
		assert.Greater(t, f4, f3, "one sequence with SetNXFenced")
		out, _, _ = b.LockAttempt(lock, []byte("r6"), kv.LockShared, time.Minute, 0)
		assert.Equal(t, kv.Exists, out, "set_nx's lock is an exclusive hold")
		assert.True(t, release("s"), "lock_release frees set_nx's lock")
		out, f5, _ := b.LockAttempt(lock, []byte("r6"), kv.LockShared, time.Minute, 0)
		require.Equal(t, kv.Inserted, out)
		assert.Greater(t, f5, f4)
		ok, err = backend.SetFenced(b, lock+":data", []byte("v"), 0, lock, f5)
		require.NoError(t, err)
		assert.True(t, ok, "a read grant is the latest grant")
		out, _ = b.SetNX(lock, []byte("x"), time.Minute)
		assert.Equal(t, kv.Exists, out, "set_nx sees a read-held name held")
		ok, _ = b.DelIfEq(lock, []byte("r6"))
		assert.False(t, ok, "del_if_eq sees a read-held name unequal")
		removed, err := b.Del(lock)
		require.NoError(t, err)
		assert.True(t, removed, "del removes every holder")
		_, holders, _ = b.LockInfo(lock)
		assert.Zero(t, holders)
	}},
	{"LockHoldsLapseAndRefresh", func(t *testing.T, b backend.Backend, p string, clock Clock) {
		lock := p + "rw"
		release, refresh := lockCalls(t, b, lock)
		out, _, err := b.LockAttempt(lock, []byte("short"), kv.LockShared, 100*time.Millisecond, 0)
		require.NoError(t, err)
		require.Equal(t, kv.Inserted, out)
		out, _, _ = b.LockAttempt(lock, []byte("long"), kv.LockShared, time.Minute, 0)
		require.Equal(t, kv.Inserted, out)
		ok, err := b.LockRefresh(lock, []byte("nobody"), time.Minute)
		require.NoError(t, err)
		assert.False(t, ok, "refresh by a token that holds nothing")
		require.Eventually(t, func() bool { _, n, _ := b.LockInfo(lock); return n == 1 }, hangCatch, 5*time.Millisecond,
			"a lapsed hold counts as absent")
		assert.False(t, refresh("short", time.Minute), "a lapsed hold is not refreshed")
		assert.False(t, release("short"))
		assert.True(t, refresh("long", 100*time.Millisecond))
		require.Eventually(t, func() bool { _, n, _ := b.LockInfo(lock); return n == 0 }, hangCatch, 5*time.Millisecond,
			"refreshed to lapse soon")
		// 30 s, refreshed to a minute: no host's pace lets it lapse first.
		out, _, _ = b.LockAttempt(lock, []byte("ex"), kv.LockExclusive, 30*time.Second, 0)
		require.Equal(t, kv.Inserted, out, "every hold lapsed: free")
		assert.True(t, refresh("ex", time.Minute), "an exclusive hold refreshes")
		ttl, found, _ := b.PTTL(lock)
		require.True(t, found)
		assert.Greater(t, ttl, 50*time.Second)
		ok, _ = b.ExpireIfEq(lock, []byte("ex"), time.Minute)
		assert.True(t, ok, "expire_if_eq works on an exclusive hold")
		assert.True(t, release("ex"))

		// A claim lapses too: readers enter again once the writer stops.
		// The claim refuses readers while it lives: asserted unless the host
		// took longer than the claim to get to the next attempt.
		out, _, _ = b.LockAttempt(lock, []byte("r"), kv.LockShared, time.Minute, 0)
		require.Equal(t, kv.Inserted, out)
		const claim = 100 * time.Millisecond
		claimed := clock.Now()
		out, _, _ = b.LockAttempt(lock, []byte("w"), kv.LockExclusive, time.Minute, claim)
		require.Equal(t, kv.Exists, out)
		out, _, _ = b.LockAttempt(lock, []byte("r2"), kv.LockShared, time.Minute, 0)
		if time.Duration(clock.Now()-claimed) < claim-2*clock.Resolution {
			assert.Equal(t, kv.Exists, out, "claimed")
		} else if out == kv.Inserted {
			require.True(t, release("r2"))
		}
		require.Eventually(t, func() bool {
			out, _, _ := b.LockAttempt(lock, []byte("r2"), kv.LockShared, time.Minute, 0)
			return out == kv.Inserted
		}, hangCatch, 5*time.Millisecond, "a lapsed claim refuses nobody")
		_, n, _ := b.LockInfo(lock)
		assert.Equal(t, 2, n)
	}},
	{"LockAttemptRefusesBadArguments", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		lock := p + "rw"
		for _, tok := range [][]byte{{}, make([]byte, 256)} {
			_, _, err := b.LockAttempt(lock, tok, kv.LockShared, time.Minute, 0)
			assert.ErrorIs(t, err, kv.ErrInvalidArgument, "a token of %d bytes", len(tok))
		}
		_, _, err := b.LockAttempt(lock, []byte("t"), kv.LockMode(2), time.Minute, 0)
		assert.ErrorIs(t, err, kv.ErrInvalidArgument, "mode 2")
		_, _, err = b.LockAttempt(lock, []byte("t"), kv.LockShared, -time.Second, 0)
		assert.ErrorIs(t, err, kv.ErrInvalidArgument, "a negative TTL")
		out, _, err := b.LockAttempt(lock, []byte("t"), kv.LockShared, time.Minute, 0)
		require.NoError(t, err)
		require.Equal(t, kv.Inserted, out)
		_, _, err = b.LockAttempt(lock, []byte("t"), kv.LockShared, time.Minute, 0)
		assert.ErrorIs(t, err, kv.ErrInvalidArgument, "a token that already reads")
		_, n, _ := b.LockInfo(lock)
		assert.Equal(t, 1, n, "a refused call changes nothing")
		f, _ := b.Fence(lock)
		_, _, err = b.LockAttempt(lock, make([]byte, 300), kv.LockExclusive, time.Minute, 0)
		assert.ErrorIs(t, err, kv.ErrInvalidArgument)
		got, _ := b.Fence(lock)
		assert.Equal(t, f, got, "a refused call mints nothing")
	}},
	{"ReadersAndWritersNeverOverlap", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// 16 callers at a barrier, 4 of them writers, each takes the lock
		// 15 times through the wait loop. A writer must hold it alone; a
		// reader only beside readers. Every grant's fence exceeds that of
		// every grant that came before it: a writer's every earlier
		// fence, a reader's the fence of the writer before it.
		lock := p + "rw"
		l := &lockwait.Locker{Store: b}
		var readers, writers atomic.Int32
		var mu sync.Mutex
		maxFence, lastWriter := int64(0), int64(0)
		seen := map[int64]bool{}
		barrier.Race(16, func(i int) bool {
			mode := kv.LockShared
			if i%4 == 0 {
				mode = kv.LockExclusive
			}
			for r := 0; r < 15; r++ {
				tok := []byte(fmt.Sprintf("%d:%d", i, r))
				res, f, err := l.AcquireLock(b, lock, tok, mode, time.Minute, time.Minute)
				if !assert.NoError(t, err) || !assert.True(t, res.Acquired) {
					return false
				}
				if mode == kv.LockExclusive {
					assert.Equal(t, int32(1), writers.Add(1), "one writer at a time")
					assert.Zero(t, readers.Load(), "no reader beside a writer")
				} else {
					readers.Add(1)
					assert.Zero(t, writers.Load(), "no writer beside a reader")
				}
				mu.Lock()
				assert.False(t, seen[f], "fence %d granted twice", f)
				seen[f] = true
				if mode == kv.LockExclusive {
					assert.Greater(t, f, maxFence, "a writer's fence exceeds every earlier grant's")
					lastWriter = f
				} else {
					assert.Greater(t, f, lastWriter, "a reader's fence exceeds the writer's before it")
				}
				maxFence = max(maxFence, f)
				mu.Unlock()
				time.Sleep(time.Millisecond) // hold it a little: readers overlap
				if mode == kv.LockExclusive {
					writers.Add(-1)
				} else {
					readers.Add(-1)
				}
				ok, err := b.LockRelease(lock, tok)
				assert.NoError(t, err)
				assert.True(t, ok)
			}
			return true
		})
		assert.Len(t, seen, 16*15)
		_, n, _ := b.LockInfo(lock)
		assert.Zero(t, n, "every hold released")
	}},
	{"AWaitingWriterIsNotStarvedByReaders", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// Readers keep the name read-held without a gap (each re-enters
		// while the others hold); a writer waiting for them gets it.
		lock := p + "rw"
		l := &lockwait.Locker{Store: b}
		var stop atomic.Bool
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			out, _, err := b.LockAttempt(lock, []byte(fmt.Sprint("first:", i)), kv.LockShared, time.Minute, 0)
			require.NoError(t, err)
			require.Equal(t, kv.Inserted, out)
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				prev := []byte(fmt.Sprint("first:", i))
				for r := 0; !stop.Load(); r++ {
					time.Sleep(5 * time.Millisecond)
					b.LockRelease(lock, prev)
					prev = []byte(fmt.Sprint(i, ":", r))
					res, _, err := l.AcquireLock(b, lock, prev, kv.LockShared, time.Minute, 5*hangCatch)
					if !assert.NoError(t, err) || !res.Acquired {
						return
					}
				}
				b.LockRelease(lock, prev)
			}(i)
		}
		time.Sleep(20 * time.Millisecond) // the readers' loop runs
		// The readers read on until stopped: a starved writer would wait out
		// its budget (a hang catch, not a speed bound).
		res, _, err := l.AcquireLock(b, lock, []byte("writer"), kv.LockExclusive, time.Minute, hangCatch)
		stop.Store(true)
		require.NoError(t, err)
		assert.True(t, res.Acquired, "the writer got the lock within its wait")
		if res.Acquired {
			mode, n, _ := b.LockInfo(lock)
			assert.Equal(t, kv.LockExclusive, mode)
			assert.Equal(t, 1, n)
			b.LockRelease(lock, []byte("writer"))
		}
		wg.Wait()
	}},
}

// lockCalls are LockRelease and LockRefresh of lock, failing t on an
// error, for tests that assert what they report.
func lockCalls(t *testing.T, b backend.Backend, lock string) (release func(tok string) bool, refresh func(tok string, ttl time.Duration) bool) {
	release = func(tok string) bool {
		ok, err := b.LockRelease(lock, []byte(tok))
		require.NoError(t, err)
		return ok
	}
	refresh = func(tok string, ttl time.Duration) bool {
		ok, err := b.LockRefresh(lock, []byte(tok), ttl)
		require.NoError(t, err)
		return ok
	}
	return release, refresh
}

// wokenByRelease checks that release, which must release lock (held past
// hangCatch), wakes a caller waiting for lock, well before its wait would
// end (hangCatch tells the two apart: a hang catch, not a speed bound).
func wokenByRelease(t *testing.T, b backend.Backend, lock string, release func() (bool, error)) {
	t.Helper()
	done := make(chan time.Duration)
	go func() {
		start := time.Now()
		free, err := b.Wait(lock, 5*hangCatch)
		assert.NoError(t, err)
		assert.True(t, free)
		done <- time.Since(start)
	}()
	time.Sleep(100 * time.Millisecond) // let it subscribe and block
	ok, err := release()
	require.NoError(t, err)
	require.True(t, ok)
	assert.Less(t, <-done, hangCatch, "woken by the release, not the timeout")
}

// DecodeRecords reads count get_many value records (include/ephpm_kv.h,
// "Batch records") that must fill buf exactly: each key's value, and
// whether it was found.
func DecodeRecords(t testing.TB, buf []byte, count int) ([][]byte, []bool) {
	t.Helper()
	values, found := make([][]byte, count), make([]bool, count)
	for i := 0; i < count; i++ {
		require.GreaterOrEqual(t, len(buf), 4, "record %d", i)
		n := binary.NativeEndian.Uint32(buf)
		buf = buf[4:]
		if n == backend.Missing {
			continue
		}
		require.GreaterOrEqual(t, uint64(len(buf)), uint64(n), "record %d", i)
		values[i], found[i], buf = buf[:n], true, buf[n:]
	}
	require.Empty(t, buf, "records fill the buffer exactly")
	return values, found
}
