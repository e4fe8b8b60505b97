// The contract of the basic members: Get, Set, Del, SetNX, DelIfEq, Expire,
// ExpireIfEq, PTTL and IncrBy, their TTLs and their limits.

package backendtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/sessionkeys"
)

// basicContract: the members that each act on one key.
var basicContract = []struct {
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
		assert.Equal(t, contract.Inserted, out)
		out, _ = b.SetNX(p+"l", []byte("B"), time.Minute)
		assert.Equal(t, contract.Exists, out)
		ok, err := b.DelIfEq(p+"l", []byte("B"))
		require.NoError(t, err)
		assert.False(t, ok)
		ok, _ = b.DelIfEq(p+"l", []byte("A"))
		assert.True(t, ok)
	}},
	{"StaleRelease", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		// A's lock expires, B takes it, A's late release must not remove it.
		out, _ := b.SetNX(p+"lock", []byte("A"), 100*time.Millisecond)
		require.Equal(t, contract.Inserted, out)
		time.Sleep(150 * time.Millisecond)
		out, _ = b.SetNX(p+"lock", []byte("B"), time.Minute)
		require.Equal(t, contract.Inserted, out)
		ok, err := b.DelIfEq(p+"lock", []byte("A"))
		require.NoError(t, err)
		assert.False(t, ok)
		out, _ = b.SetNX(p+"lock", []byte("C"), time.Minute)
		assert.Equal(t, contract.Exists, out)
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
		assert.ErrorIs(t, err, contract.ErrNotInteger)
		require.NoError(t, b.Set(p+"m", []byte("9223372036854775807"), 0))
		_, err = b.IncrBy(p+"m", 1, 0)
		assert.ErrorIs(t, err, contract.ErrOverflow)
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
			assert.ErrorIs(t, err, contract.ErrNotInteger, "%q", bad)
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
}
