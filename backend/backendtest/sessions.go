package backendtest

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/barrier"
	"github.com/ephpm/ephpm/sessionkeys"
)

// SessionStore opens a fresh store for t with the session rule of package
// session (contract.NewSessionRule(sessionkeys.DataPrefix,
// sessionkeys.LockPrefix, limitName))
// and the memory setting cfg.
type SessionStore func(t *testing.T, cfg contract.MemoryConfig, limitName string) backend.Backend

// RunSessionBudget runs the session budget's rules against the stores that
// have one (the in-process store, a shared-memory segment): session data
// stays within its budget, goes only to make room for other session data,
// never while its lock is held, never-read sessions before returning ones,
// and a flood of sessions never fails other writes. The limits are the
// shared-memory store's smallest and up.
func RunSessionBudget(t *testing.T, open SessionStore) {
	for _, c := range sessionBudget {
		t.Run(c.name, func(t *testing.T) { c.run(t, open) })
	}
}

// visit is one request of session sid, as the PHP session handler makes it:
// take the lock, read the data, write it back under the lock, release. It
// reports whether the data was there.
func visit(t *testing.T, b backend.Backend, sid string, data []byte) (bool, error) {
	t.Helper()
	lock, tok := sessionkeys.LockKey(sid), []byte("token-"+sid)
	out, err := b.SetNX(lock, tok, 30*time.Second)
	if err != nil {
		return false, err
	}
	require.Equal(t, contract.Inserted, out)
	defer b.DelIfEq(lock, tok)
	_, found, err := b.GetInto(sessionkeys.DataKey(sid), make([]byte, 1024))
	require.NoError(t, err)
	ok, err := backend.SetGuarded(b, sessionkeys.DataKey(sid), data, time.Hour, lock, tok)
	require.True(t, ok || err != nil)
	return found, err
}

func has(t *testing.T, b backend.Backend, key string) bool {
	t.Helper()
	ok, err := b.Exists(key)
	require.NoError(t, err)
	return ok
}

func stats(t *testing.T, b backend.Backend) contract.Stats {
	t.Helper()
	st, err := b.Stats()
	require.NoError(t, err)
	return st
}

var csrf = []byte(`csrf|s:64:"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";`)

const smallStore = 256 << 10

var sessionBudget = []struct {
	name string
	run  func(t *testing.T, open SessionStore)
}{
	// A flood of sessions nobody comes back to stays within the session
	// budget and makes no other key go.
	{"DataStaysWithinItsBudget", func(t *testing.T, open SessionStore) {
		b := open(t, contract.MemoryConfig{Limit: 4 << 20, Policy: contract.AllKeysLRU}, "")
		require.Equal(t, int64(2<<20), stats(t, b).SessionLimit, "the default budget is half the limit")
		v := bytes.Repeat([]byte("v"), 1000)
		for i := 0; i < 100; i++ {
			require.NoError(t, b.Set(fmt.Sprintf("cache:%d", i), v, 0))
		}
		for i := 0; i < 20000; i++ {
			_, err := visit(t, b, fmt.Sprintf("flood%05d", i), csrf)
			require.NoError(t, err)
			if i%100 == 0 {
				st := stats(t, b)
				require.LessOrEqual(t, st.SessionBytes, st.SessionLimit)
				require.LessOrEqual(t, st.BytesUsed, st.MemoryLimit)
			}
		}
		st := stats(t, b)
		assert.NotZero(t, st.Evictions)
		assert.Greater(t, st.SessionBytes, st.SessionLimit*9/10, "the budget is used, not refused early")
		for i := 0; i < 100; i++ {
			assert.True(t, has(t, b, fmt.Sprintf("cache:%d", i)), "session data made cache:%d go", i)
		}
	}},
	// Other writes never make session data go, even under allkeys-lru: the
	// budget is the sessions' own.
	{"OnlySessionDataMakesSessionDataGo", func(t *testing.T, open SessionStore) {
		b := open(t, contract.MemoryConfig{Limit: 1 << 20, Policy: contract.AllKeysLRU}, "")
		for i := 0; i < 500; i++ {
			_, err := visit(t, b, fmt.Sprintf("s%03d", i), csrf)
			require.NoError(t, err)
		}
		require.Zero(t, stats(t, b).Evictions)
		v := bytes.Repeat([]byte("v"), 1000)
		for i := 0; i < 3000; i++ {
			require.NoError(t, b.Set(fmt.Sprintf("cache:%d", i), v, 0))
		}
		assert.NotZero(t, stats(t, b).Evictions)
		for i := 0; i < 500; i++ {
			assert.True(t, has(t, b, sessionkeys.DataKey(fmt.Sprintf("s%03d", i))))
		}
	}},
	// The data of a session whose lock is there (a request is using it) is
	// never evicted; once the lock is released it may be.
	{"AHeldSessionIsNeverEvicted", func(t *testing.T, open SessionStore) {
		b := open(t, contract.MemoryConfig{Limit: smallStore, Policy: contract.AllKeysLRU}, "")
		tok := []byte("held-token")
		_, err := b.SetNX(sessionkeys.LockKey("held"), tok, time.Minute)
		require.NoError(t, err)
		ok, err := backend.SetGuarded(b, sessionkeys.DataKey("held"), csrf, time.Hour, sessionkeys.LockKey("held"), tok)
		require.NoError(t, err)
		require.True(t, ok)
		for i := 0; i < 3000; i++ {
			_, err := visit(t, b, fmt.Sprintf("flood%04d", i), csrf)
			require.NoError(t, err)
		}
		require.NotZero(t, stats(t, b).Evictions)
		assert.True(t, has(t, b, sessionkeys.DataKey("held")), "evicted while its lock was held")

		ok, err = b.DelIfEq(sessionkeys.LockKey("held"), tok)
		require.NoError(t, err)
		require.True(t, ok)
		// Evictable, not first: entries stamped in the same LRU tick (memstore's
		// clock moves with its sweeper, every 100 ms, later on a busy host)
		// are sampled at random, so it goes within a few store-fulls of
		// visits (~1000 sessions each), not by a given one.
		for i := 0; i < 30000 && has(t, b, sessionkeys.DataKey("held")); i++ {
			_, err := visit(t, b, fmt.Sprintf("more%04d", i), csrf)
			require.NoError(t, err)
		}
		assert.False(t, has(t, b, sessionkeys.DataKey("held")), "a released session that nobody read back is evictable")
	}},
	// Requests that hold their session's lock never lose its data while
	// other goroutines, released together, flood the budget: the check of
	// the lock and the eviction are one step. Concurrent session writes
	// never pass the budget together.
	{"AHeldSessionSurvivesAConcurrentFlood", func(t *testing.T, open SessionStore) {
		b := open(t, contract.MemoryConfig{Limit: smallStore, Policy: contract.AllKeysLRU}, "")
		const users, flooders, rounds = 8, 8, 300
		var lost atomic.Int32
		barrier.Race(users+flooders, func(g int) bool {
			for r := 0; r < rounds; r++ {
				if g >= users {
					if _, err := visit(t, b, fmt.Sprintf("flood-%d-%d", g, r), csrf); err != nil {
						t.Error(err)
					}
					continue
				}
				sid := fmt.Sprintf("user-%d", g)
				lock, tok := sessionkeys.LockKey(sid), []byte(fmt.Sprintf("tok-%d-%d", g, r))
				if out, err := b.SetNX(lock, tok, time.Minute); err != nil || out != contract.Inserted {
					t.Errorf("lock %s: %v %v", sid, out, err)
					return false
				}
				if ok, err := backend.SetGuarded(b, sessionkeys.DataKey(sid), csrf, time.Hour, lock, tok); err != nil || !ok {
					t.Errorf("write %s: %v %v", sid, ok, err)
					return false
				}
				for k := 0; k < 5; k++ {
					if ok, err := b.Exists(sessionkeys.DataKey(sid)); err != nil || !ok {
						lost.Add(1)
					}
				}
				b.DelIfEq(lock, tok)
			}
			return true
		})
		assert.Zero(t, lost.Load(), "data of held sessions evicted")
		st := stats(t, b)
		assert.NotZero(t, st.Evictions)
		assert.LessOrEqual(t, st.SessionBytes, st.SessionLimit)
	}},
	// When the budget is full, sessions written and never read back (a
	// flood's) make room before any session whose user came back, so
	// returning users keep theirs and a new user can still log in.
	{"SessionsSeenOnceGoBeforeReturningOnes", func(t *testing.T, open SessionStore) {
		b := open(t, contract.MemoryConfig{Limit: 1 << 20, Policy: contract.AllKeysLRU}, "")
		const returning = 50
		for i := 0; i < returning; i++ {
			sid := fmt.Sprintf("user%02d", i)
			_, err := visit(t, b, sid, csrf) // the login page
			require.NoError(t, err)
			found, err := visit(t, b, sid, append(csrf, "user|s:5:\"alice\";"...)) // the login
			require.NoError(t, err)
			require.True(t, found)
		}
		for i := 0; i < 20000; i++ {
			_, err := visit(t, b, fmt.Sprintf("flood%05d", i), csrf)
			require.NoError(t, err)
			if i%2000 == 0 { // returning users come back now and then
				for u := 0; u < returning; u++ {
					found, err := visit(t, b, fmt.Sprintf("user%02d", u), csrf)
					require.NoError(t, err)
					require.True(t, found, "returning user%02d lost its session after %d new ones", u, i)
				}
			}
		}
		require.NotZero(t, stats(t, b).Evictions)
		for u := 0; u < returning; u++ {
			assert.True(t, has(t, b, sessionkeys.DataKey(fmt.Sprintf("user%02d", u))))
		}
		// A new user's login page and login.
		_, err := visit(t, b, "newuser", csrf)
		require.NoError(t, err)
		found, err := visit(t, b, "newuser", csrf)
		require.NoError(t, err)
		assert.True(t, found, "a new user's session was not kept")
	}},
	// Once only returning users' sessions are left, they make room too.
	{"ReturningSessionsMakeRoomOnceAlone", func(t *testing.T, open SessionStore) {
		b := open(t, contract.MemoryConfig{Limit: smallStore, Policy: contract.AllKeysLRU}, "")
		for i := 0; i < 3000; i++ {
			sid := fmt.Sprintf("r%04d", i)
			_, err := visit(t, b, sid, csrf)
			require.NoError(t, err)
			_, err = visit(t, b, sid, csrf)
			require.NoError(t, err)
		}
		assert.NotZero(t, stats(t, b).Evictions)
	}},
	// Under noeviction a session write beyond the budget fails with
	// ErrNoMemory, naming the setting, and changes nothing; other keys and
	// locks keep working.
	{"BudgetUnderNoEvictionNamesTheSetting", func(t *testing.T, open SessionStore) {
		for _, name := range []string{"", "ephpm.session_memory_limit"} {
			t.Run(name, func(t *testing.T) {
				b := open(t, contract.MemoryConfig{Limit: 1 << 20, SessionLimit: 16 << 10}, name)
				var err error
				i := 0
				for ; i < 10000 && err == nil; i++ {
					_, err = visit(t, b, fmt.Sprintf("s%05d", i), csrf)
				}
				require.ErrorIs(t, err, contract.ErrNoMemory)
				want := name
				if want == "" {
					want = "session_memory_limit"
				}
				assert.Contains(t, err.Error(), want)
				assert.Contains(t, err.Error(), "16384 bytes")
				assert.False(t, has(t, b, sessionkeys.DataKey(fmt.Sprintf("s%05d", i-1))))
				st := stats(t, b)
				assert.LessOrEqual(t, st.SessionBytes, int64(16<<10))
				assert.Greater(t, st.SessionBytes, int64(15<<10), "refused at the budget, not before")
				assert.Zero(t, st.Evictions)
				require.NoError(t, b.Set("small", []byte("value"), 0))
				_, err = b.SetNX("lock:x", []byte("t"), time.Minute)
				require.NoError(t, err)
			})
		}
	}},
	// However many sessions arrive, under every policy, a small Set and a
	// lock never fail.
	{"ASessionFloodNeverFailsASetOrALock", func(t *testing.T, open SessionStore) {
		for _, policy := range []contract.Policy{contract.NoEviction, contract.VolatileLRU, contract.AllKeysLRU} {
			t.Run(policy.String(), func(t *testing.T) {
				b := open(t, contract.MemoryConfig{Limit: smallStore, Policy: policy}, "")
				for i := 0; i < 3000; i++ {
					_, err := visit(t, b, fmt.Sprintf("flood%05d", i), csrf)
					if policy != contract.NoEviction {
						require.NoError(t, err)
					}
					require.NoError(t, b.Set(fmt.Sprintf("small:%d", i%10), []byte("value"), 0))
					lock := fmt.Sprintf("lock:%d", i%10)
					out, err := b.SetNX(lock, []byte("t"), time.Minute)
					require.NoError(t, err)
					require.Equal(t, contract.Inserted, out)
					ok, err := b.DelIfEq(lock, []byte("t"))
					require.NoError(t, err)
					require.True(t, ok)
				}
				require.NoError(t, b.Set("after", bytes.Repeat([]byte("v"), 1000), 0))
				_, err := b.SetNX("lock:after", bytes.Repeat([]byte("t"), 100), time.Minute)
				require.NoError(t, err)
			})
		}
	}},
}
