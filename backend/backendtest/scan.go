package backendtest

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
)

// The scan member's walk (backend.Scanner), which every backend answers.
func init() {
	cases = append(cases, scanContract...)
}

// walkAll walks b's entries under prefix page by page, count a page, and
// returns every entry it was given, by key (a key given twice keeps its
// last look) and in the order first given.
func walkAll(t *testing.T, b backend.Backend, prefix string, count int, locksOnly bool) (map[string]backend.KeyInfo, []string) {
	t.Helper()
	seen := map[string]backend.KeyInfo{}
	var order []string
	var cursor uint64
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100000, "the walk ends")
		page, err := b.Scan(prefix, cursor, count, locksOnly)
		require.NoError(t, err)
		require.Empty(t, page.Skipped)
		for _, k := range page.Keys {
			if _, ok := seen[k.Key]; !ok {
				order = append(order, k.Key)
			}
			seen[k.Key] = k
		}
		if cursor = page.Next; cursor == 0 {
			return seen, order
		}
	}
}

var scanContract = []struct {
	name string
	run  func(t *testing.T, b backend.Backend, p string, clock Clock)
}{
	{"ScanWalksEveryKeyOfAPrefix", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		var want []string
		for i := 0; i < 40; i++ {
			k := fmt.Sprintf("%sa:%02d", p, i)
			ttl := time.Duration(0)
			if i%2 == 1 {
				ttl = time.Hour
			}
			require.NoError(t, b.Set(k, make([]byte, i), ttl))
			want = append(want, k)
		}
		require.NoError(t, b.Set(p+"b", []byte("other"), 0))
		require.NoError(t, b.Set(p+"a\x00bin", []byte{0xff}, 0))
		want = append(want, p+"a\x00bin")
		for _, count := range []int{1, 7, 1000} {
			_, order := walkAll(t, b, p+"a", count, false)
			sort.Strings(order)
			sorted := append([]string(nil), want...)
			sort.Strings(sorted)
			assert.Equal(t, sorted, order, "count %d: every key of the prefix, and only those", count)
		}
		seen, _ := walkAll(t, b, p+"a", 10, false)
		for i := 0; i < 40; i++ {
			k := seen[fmt.Sprintf("%sa:%02d", p, i)]
			assert.Equal(t, int64(i), k.Size, k.Key)
			assert.False(t, k.Lock, k.Key)
			assert.Equal(t, backend.KindValue, k.Kind(""), k.Key)
			if i%2 == 1 {
				assert.Greater(t, k.TTL, 59*time.Minute, k.Key)
				assert.LessOrEqual(t, k.TTL, time.Hour, k.Key)
			} else {
				assert.Equal(t, time.Duration(-1), k.TTL, k.Key)
			}
		}
		assert.Equal(t, backend.KindSession, seen[p+"a:01"].Kind(p+"a:0"), "a key under the session data prefix is session data")
	}},
	{"ScanTellsLocks", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		require.NoError(t, b.Set(p+"value", []byte("v"), 0))
		for _, tok := range []string{"r1", "r2"} {
			out, _, err := b.LockAttempt(p+"rw", []byte(tok), contract.LockShared, time.Minute, 0)
			require.NoError(t, err)
			require.Equal(t, contract.Inserted, out)
		}
		_, err := b.SetNX(p+"x", []byte("tok"), time.Minute)
		require.NoError(t, err)
		locks, _ := walkAll(t, b, p, 100, true)
		rw, ok := locks[p+"rw"]
		require.True(t, ok, "a read-held lock is in the walk of locks")
		assert.True(t, rw.Lock)
		assert.Equal(t, 2, rw.Readers)
		assert.Equal(t, backend.KindSharedLock, rw.Kind(""))
		assert.Equal(t, 2, rw.Holders())
		assert.NotContains(t, locks, p+"value", "a value is no lock")
		all, _ := walkAll(t, b, p, 100, false)
		assert.Contains(t, all, p+"value")
		assert.Contains(t, all, p+"x")
		if strings.HasPrefix(b.Name(), "redis") {
			return // a set_nx lock nobody waits for is a plain string there
		}
		x, ok := locks[p+"x"]
		require.True(t, ok, "a set_nx lock is in the walk of locks")
		assert.Equal(t, backend.KindLock, x.Kind(""))
		assert.Equal(t, 1, x.Holders())
		assert.Greater(t, x.TTL, 59*time.Second)
		assert.Equal(t, backend.KindLock, all[p+"x"].Kind(""), "and a lock in the walk of every key")

		// A caller waiting for the lock is counted.
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.Wait(p+"x", 3*time.Second)
		}()
		require.Eventually(t, func() bool {
			locks, _ := walkAll(t, b, p+"x", 100, true)
			return locks[p+"x"].Waiters == 1
		}, 2*time.Second, 10*time.Millisecond, "the waiter is counted")
		ok, err = b.DelIfEq(p+"x", []byte("tok"))
		require.NoError(t, err)
		require.True(t, ok)
		<-done
	}},
	{"ScanRefusesACursorNoWalkGives", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		_, err := b.Scan(p, ^uint64(0), 10, false)
		require.Error(t, err)
		assert.True(t, errors.Is(err, contract.ErrInvalidArgument), "%v", err)
	}},
}
