// The contract of fences: Fence, fenced writes and releases, and fences
// minted under contention.

package backendtest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/barrier"
	"github.com/ephpm/ephpm/lockwait"
	"github.com/ephpm/ephpm/sessionkeys"
)

// fenceContract: fences that grow with every grant, and the writes they
// refuse once stale.
var fenceContract = []struct {
	name string
	run  func(t *testing.T, b backend.Backend, p string, clock Clock)
}{
	{"FencesIncreaseWithEveryGrant", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		lock := p + "lock"
		f, err := b.Fence(lock)
		require.NoError(t, err)
		assert.Zero(t, f, "never granted")
		out, f1, err := backend.SetNXFenced(b, lock, []byte("a"), time.Minute)
		require.NoError(t, err)
		require.Equal(t, contract.Inserted, out)
		assert.Positive(t, f1)
		f, _ = b.Fence(lock)
		assert.Equal(t, f1, f)
		out, f, err = backend.SetNXFenced(b, lock, []byte("b"), time.Minute)
		require.NoError(t, err)
		assert.Equal(t, contract.Exists, out)
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
		assert.ErrorIs(t, err, contract.ErrInvalidArgument)
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
		assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	}},
	{"SetNXGetFenced", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		data, lock := sessionkeys.DataKey(p+"sid"), sessionkeys.LockKey(p+"sid")
		dst := make([]byte, 8)
		out, n, found, f1, err := backend.SetNXGetFenced(b, lock, []byte("tok"), time.Minute, data, dst)
		require.NoError(t, err)
		assert.Equal(t, contract.Inserted, out)
		assert.False(t, found, "no data yet")
		assert.Zero(t, n)
		assert.Positive(t, f1)
		boundTTL(t, b, lock, time.Minute)
		latest, _ := b.Fence(lock)
		assert.Equal(t, f1, latest)

		require.NoError(t, b.Set(data, []byte("v1"), time.Minute))
		out, n, found, f, err := backend.SetNXGetFenced(b, lock, []byte("other"), time.Minute, data, dst)
		require.NoError(t, err)
		assert.Equal(t, contract.Exists, out, "held")
		assert.False(t, found, "nothing read without the lock")
		assert.Zero(t, f, "no grant, no fence")
		b.DelIfEq(lock, []byte("tok"))

		_, f2, err := backend.SetNXFenced(b, lock, []byte("tok2"), time.Minute)
		require.NoError(t, err)
		assert.Greater(t, f2, f1, "one sequence with SetNXFenced")
		b.DelIfEq(lock, []byte("tok2"))

		out, n, found, f3, err := backend.SetNXGetFenced(b, lock, []byte("tok3"), 0, data, dst)
		require.NoError(t, err)
		assert.Equal(t, contract.Inserted, out)
		assert.True(t, found)
		assert.Equal(t, "v1", string(dst[:n]))
		assert.Greater(t, f3, f2)
		boundTTL(t, b, lock, 0)
		b.DelIfEq(lock, []byte("tok3"))

		// A value that fills dst exactly, and one longer than dst.
		require.NoError(t, b.Set(data, []byte("12345678"), time.Minute))
		out, n, found, _, _ = backend.SetNXGetFenced(b, lock, []byte("tok4"), time.Minute, data, dst)
		assert.Equal(t, contract.Inserted, out)
		assert.True(t, found)
		assert.Equal(t, "12345678", string(dst[:n]), "fits exactly")
		b.DelIfEq(lock, []byte("tok4"))
		require.NoError(t, b.Set(data, []byte("longer than 8"), time.Minute))
		copy(dst, "unread..")
		out, n, found, f5, _ := backend.SetNXGetFenced(b, lock, []byte("tok5"), time.Minute, data, dst)
		assert.Equal(t, contract.Inserted, out)
		assert.True(t, found)
		assert.Equal(t, 13, n, "too small: the length comes back")
		assert.Equal(t, "unread..", string(dst), "and nothing is copied")
		assert.Positive(t, f5)
		b.DelIfEq(lock, []byte("tok5"))
		require.NoError(t, b.Set(data, []byte{}, time.Minute))
		out, n, found, _, _ = backend.SetNXGetFenced(b, lock, []byte("tok6"), time.Minute, data, dst)
		assert.Equal(t, contract.Inserted, out)
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
		assert.ErrorIs(t, err, contract.ErrInvalidArgument)
		_, err = backend.DelFencedRelease(b, data, lock, -1, []byte("b"))
		assert.ErrorIs(t, err, contract.ErrInvalidArgument)
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
			require.Equal(t, contract.Inserted, out)
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
}
