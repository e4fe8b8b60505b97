package kv

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	dataPrefix = "session:"
	lockPrefix = "session_lock:"
)

func newSessionStore(t *testing.T, cfg MemoryConfig) *Store {
	t.Helper()
	clk := &fakeClock{}
	clk.ns.Store(1_000_000_000)
	s := New(Options{Now: clk.now, SweepInterval: -1, SessionDataPrefix: dataPrefix, SessionLockPrefix: lockPrefix})
	t.Cleanup(s.Close)
	require.NoError(t, s.Configure(cfg))
	return s
}

// visit is one request of session sid, as the PHP session handler makes it:
// take the lock, read the data, write it back under the lock, release. It
// reports whether the data was there.
func visit(t *testing.T, s *Store, sid string, data []byte) (bool, error) {
	t.Helper()
	lock, tok := lockPrefix+sid, []byte("token-"+sid)
	out, err := s.SetNX(lock, tok, 30*time.Second)
	if err != nil {
		return false, err
	}
	require.Equal(t, Inserted, out)
	defer s.DelIfEq(lock, tok)
	_, found := s.Get(dataPrefix + sid)
	ok, err := s.SetGuarded(dataPrefix+sid, data, time.Hour, lock, tok)
	require.True(t, ok || err != nil)
	return found, err
}

var csrf = []byte(`csrf|s:64:"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";`)

// A flood of sessions nobody comes back to stays within the session budget
// and makes no other key go.
func TestSessionDataStaysWithinItsBudget(t *testing.T) {
	s := newSessionStore(t, MemoryConfig{Limit: 256 << 10, Policy: AllKeysLRU})
	require.Equal(t, int64(128<<10), s.Stats().SessionLimit, "the default budget is half the limit")
	v := bytes.Repeat([]byte("v"), 1000)
	for i := 0; i < 100; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("cache:%d", i), v, 0))
	}
	for i := 0; i < 5000; i++ {
		_, err := visit(t, s, fmt.Sprintf("flood%05d", i), csrf)
		require.NoError(t, err)
		st := s.Stats()
		require.LessOrEqual(t, st.SessionBytes, st.SessionLimit)
		require.LessOrEqual(t, st.BytesUsed, st.MemoryLimit)
	}
	assert.NotZero(t, s.Stats().Evictions)
	for i := 0; i < 100; i++ {
		assert.True(t, s.Exists(fmt.Sprintf("cache:%d", i)), "session data made cache:%d go", i)
	}
}

// Other writes never make session data go, even under allkeys-lru: the
// budget is the sessions' own.
func TestOnlySessionDataMakesSessionDataGo(t *testing.T) {
	s := newSessionStore(t, MemoryConfig{Limit: 256 << 10, Policy: AllKeysLRU})
	for i := 0; i < 500; i++ {
		_, err := visit(t, s, fmt.Sprintf("s%03d", i), csrf)
		require.NoError(t, err)
	}
	require.Zero(t, s.Stats().Evictions)
	v := bytes.Repeat([]byte("v"), 1000)
	for i := 0; i < 1000; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("cache:%d", i), v, 0))
	}
	assert.NotZero(t, s.Stats().Evictions)
	for i := 0; i < 500; i++ {
		assert.True(t, s.Exists(fmt.Sprintf("%ss%03d", dataPrefix, i)))
	}
}

// The data of a session whose lock is there (a request is using it) is
// never evicted; once the lock is released it may be.
func TestAHeldSessionIsNeverEvicted(t *testing.T) {
	s := newSessionStore(t, MemoryConfig{Limit: 64 << 10, Policy: AllKeysLRU})
	tok := []byte("held-token")
	_, err := s.SetNX(lockPrefix+"held", tok, time.Minute)
	require.NoError(t, err)
	ok, err := s.SetGuarded(dataPrefix+"held", csrf, time.Hour, lockPrefix+"held", tok)
	require.NoError(t, err)
	require.True(t, ok)
	for i := 0; i < 2000; i++ {
		_, err := visit(t, s, fmt.Sprintf("flood%04d", i), csrf)
		require.NoError(t, err)
	}
	require.NotZero(t, s.Stats().Evictions)
	assert.True(t, s.Exists(dataPrefix+"held"), "evicted while its lock was held")

	require.True(t, s.DelIfEq(lockPrefix+"held", tok))
	for i := 0; i < 2000 && s.Exists(dataPrefix+"held"); i++ {
		_, err := visit(t, s, fmt.Sprintf("more%04d", i), csrf)
		require.NoError(t, err)
	}
	assert.False(t, s.Exists(dataPrefix+"held"), "a released session that nobody read back is evictable")
}

// Requests that hold their session's lock never lose its data, while other
// goroutines flood the budget: the check of the lock and the eviction are
// one step.
func TestAHeldSessionSurvivesAConcurrentFlood(t *testing.T) {
	s := newSessionStore(t, MemoryConfig{Limit: 64 << 10, Policy: AllKeysLRU})
	const users, flooders, rounds = 8, 8, 300
	var lost atomic.Int32
	race(users+flooders, func(g int) bool {
		for r := 0; r < rounds; r++ {
			if g >= users {
				if _, err := visit(t, s, fmt.Sprintf("flood-%d-%d", g, r), csrf); err != nil {
					t.Error(err)
				}
				continue
			}
			sid := fmt.Sprintf("user-%d", g)
			lock, tok := lockPrefix+sid, []byte(fmt.Sprintf("tok-%d-%d", g, r))
			if out, err := s.SetNX(lock, tok, time.Minute); err != nil || out != Inserted {
				t.Errorf("lock %s: %v %v", sid, out, err)
				return false
			}
			if ok, err := s.SetGuarded(dataPrefix+sid, csrf, time.Hour, lock, tok); err != nil || !ok {
				t.Errorf("write %s: %v %v", sid, ok, err)
				return false
			}
			for k := 0; k < 5; k++ {
				if !s.Exists(dataPrefix + sid) {
					lost.Add(1)
				}
			}
			s.DelIfEq(lock, tok)
		}
		return true
	})
	assert.Zero(t, lost.Load(), "data of held sessions evicted")
	assert.NotZero(t, s.Stats().Evictions)
}

// When the budget is full, sessions written and never read back (a flood's)
// make room before any session whose user came back, so returning users
// keep theirs and a new user can still log in.
func TestSessionsSeenOnceGoBeforeReturningOnes(t *testing.T) {
	s := newSessionStore(t, MemoryConfig{Limit: 256 << 10, Policy: AllKeysLRU})
	const returning = 50
	for i := 0; i < returning; i++ {
		sid := fmt.Sprintf("user%02d", i)
		_, err := visit(t, s, sid, csrf) // the login page
		require.NoError(t, err)
		found, err := visit(t, s, sid, append(csrf, "user|s:5:\"alice\";"...)) // the login
		require.NoError(t, err)
		require.True(t, found)
	}
	for i := 0; i < 10000; i++ {
		_, err := visit(t, s, fmt.Sprintf("flood%05d", i), csrf)
		require.NoError(t, err)
		if i%1000 == 0 { // returning users come back now and then
			for u := 0; u < returning; u++ {
				found, err := visit(t, s, fmt.Sprintf("user%02d", u), csrf)
				require.NoError(t, err)
				require.True(t, found, "returning user%02d lost its session after %d new ones", u, i)
			}
		}
	}
	for u := 0; u < returning; u++ {
		assert.True(t, s.Exists(fmt.Sprintf("%suser%02d", dataPrefix, u)))
	}
	// A new user's login page and login.
	_, err := visit(t, s, "newuser", csrf)
	require.NoError(t, err)
	found, err := visit(t, s, "newuser", csrf)
	require.NoError(t, err)
	assert.True(t, found, "a new user's session was not kept")

	// Once only returning users' sessions are left, they make room too.
	s2 := newSessionStore(t, MemoryConfig{Limit: 64 << 10, Policy: AllKeysLRU})
	for i := 0; i < 1000; i++ {
		sid := fmt.Sprintf("r%04d", i)
		_, err := visit(t, s2, sid, csrf)
		require.NoError(t, err)
		_, err = visit(t, s2, sid, csrf)
		require.NoError(t, err)
	}
	assert.NotZero(t, s2.Stats().Evictions)
}

// Under noeviction a session write beyond the budget fails with
// ErrNoMemory, naming the setting, and changes nothing; other keys and
// locks keep working.
func TestSessionBudgetUnderNoEvictionNamesTheSetting(t *testing.T) {
	for _, name := range []string{"", "ephpm.session_memory_limit"} {
		clk := &fakeClock{}
		s := New(Options{Now: clk.now, SweepInterval: -1, SessionDataPrefix: dataPrefix,
			SessionLockPrefix: lockPrefix, SessionLimitName: name})
		defer s.Close()
		require.NoError(t, s.Configure(MemoryConfig{Limit: 256 << 10, SessionLimit: 16 << 10}))
		var err error
		i := 0
		for ; i < 10000 && err == nil; i++ {
			_, err = visit(t, s, fmt.Sprintf("s%05d", i), csrf)
		}
		require.ErrorIs(t, err, ErrNoMemory)
		want := name
		if want == "" {
			want = "session_memory_limit"
		}
		assert.Contains(t, err.Error(), want)
		assert.Contains(t, err.Error(), "16384 bytes")
		assert.False(t, s.Exists(fmt.Sprintf("%ss%05d", dataPrefix, i-1)))
		st := s.Stats()
		assert.LessOrEqual(t, st.SessionBytes, int64(16<<10))
		assert.Zero(t, st.Evictions)
		require.NoError(t, s.Set("small", []byte("value"), 0))
		_, err = s.SetNX("lock:x", []byte("t"), time.Minute)
		require.NoError(t, err)
	}
}

// However many sessions arrive, under every policy, a small Set and a lock
// never fail.
func TestASessionFloodNeverFailsASetOrALock(t *testing.T) {
	for _, policy := range []Policy{NoEviction, VolatileLRU, AllKeysLRU} {
		t.Run(policy.String(), func(t *testing.T) {
			s := newSessionStore(t, MemoryConfig{Limit: 256 << 10, Policy: policy})
			for i := 0; i < 5000; i++ {
				_, err := visit(t, s, fmt.Sprintf("flood%05d", i), csrf)
				if policy != NoEviction {
					require.NoError(t, err)
				}
				require.NoError(t, s.Set(fmt.Sprintf("small:%d", i%10), []byte("value"), 0))
				lock := fmt.Sprintf("lock:%d", i%10)
				out, err := s.SetNX(lock, []byte("t"), time.Minute)
				require.NoError(t, err)
				require.Equal(t, Inserted, out)
				require.True(t, s.DelIfEq(lock, []byte("t")))
			}
			require.NoError(t, s.Set("after", bytes.Repeat([]byte("v"), 1000), 0))
			_, err := s.SetNX("lock:after", bytes.Repeat([]byte("t"), 100), time.Minute)
			require.NoError(t, err)
		})
	}
}

func TestSessionLimitSetting(t *testing.T) {
	s := newSessionStore(t, MemoryConfig{})
	assert.Zero(t, s.Stats().SessionLimit, "no store limit: no budget")
	require.NoError(t, s.Configure(MemoryConfig{SessionLimit: 1 << 20}))
	assert.Equal(t, int64(1<<20), s.Stats().SessionLimit)
	require.NoError(t, s.Configure(MemoryConfig{Limit: 1 << 20}))
	assert.Equal(t, int64(512<<10), s.Stats().SessionLimit)
	assert.Zero(t, s.MemoryConfig().SessionLimit)
	require.NoError(t, s.Configure(MemoryConfig{Limit: 1 << 20, SessionLimit: 1<<20 - 1}))
	err := s.Configure(MemoryConfig{Limit: 1 << 20, SessionLimit: 1 << 20})
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.True(t, strings.Contains(err.Error(), "session_memory_limit"), err.Error())
	assert.ErrorIs(t, s.Configure(MemoryConfig{SessionLimit: -1}), ErrInvalidArgument)
	assert.Equal(t, int64(1<<20-1), s.Stats().SessionLimit, "a refused setting changes nothing")
}

// A session's data and lock hash by the sid: one shard holds both.
func TestASessionsDataAndLockShareAShard(t *testing.T) {
	s := newSessionStore(t, MemoryConfig{})
	for i := 0; i < 100; i++ {
		sid := fmt.Sprint(i)
		d, dh, dk := s.locate(dataPrefix + sid)
		l, lh, lk := s.locate(lockPrefix + sid)
		require.Same(t, d, l)
		require.Equal(t, dh, lh)
		require.Equal(t, KindSession, dk)
		require.Equal(t, KindSessionLock, lk)
	}
	_, _, k := s.locate("sessionX")
	assert.Equal(t, KindPlain, k)
}
