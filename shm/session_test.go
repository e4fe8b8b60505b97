package shm

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/kv"
	"github.com/ephpm/ephpm/session"
)

// The cases of kv/session_test.go, on a segment: session data within its
// budget, evicted only for other session data, never while held, never-read
// first.

const (
	dataPrefix = session.DataPrefix
	lockPrefix = session.LockPrefix
)

func sessionOptions(cfg kv.MemoryConfig) Options {
	return Options{Memory: cfg, SessionDataPrefix: dataPrefix, SessionLockPrefix: lockPrefix}
}

func openSessions(t *testing.T, cfg kv.MemoryConfig) *Store {
	t.Helper()
	return openWith(t, sessionOptions(cfg))
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
	require.Equal(t, kv.Inserted, out)
	defer s.DelIfEq(lock, tok)
	_, found := get(t, s, dataPrefix+sid)
	ok, err := s.SetGuarded(dataPrefix+sid, data, time.Hour, lock, tok)
	require.True(t, ok || err != nil)
	return found, err
}

func has(t *testing.T, s *Store, key string) bool {
	t.Helper()
	ok, err := s.Exists(key)
	require.NoError(t, err)
	return ok
}

func stats(t *testing.T, s *Store) kv.Stats {
	t.Helper()
	st, err := s.Stats()
	require.NoError(t, err)
	return st
}

var csrf = []byte(`csrf|s:64:"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";`)

// A flood of sessions nobody comes back to stays within the session budget
// and makes no other key go, over several shards.
func TestSessionDataStaysWithinItsBudget(t *testing.T) {
	s := openSessions(t, kv.MemoryConfig{Limit: 4 << 20, Policy: kv.AllKeysLRU})
	require.Greater(t, len(s.shards), 1)
	require.Equal(t, int64(2<<20), stats(t, s).SessionLimit, "the default budget is half the limit")
	v := bytes.Repeat([]byte("v"), 1000)
	for i := 0; i < 100; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("cache:%d", i), v, 0))
	}
	for i := 0; i < 20000; i++ {
		_, err := visit(t, s, fmt.Sprintf("flood%05d", i), csrf)
		require.NoError(t, err)
		if i%100 == 0 {
			st := stats(t, s)
			require.LessOrEqual(t, st.SessionBytes, st.SessionLimit)
			require.LessOrEqual(t, st.BytesUsed, st.MemoryLimit)
		}
	}
	st := stats(t, s)
	assert.NotZero(t, st.Evictions)
	assert.Greater(t, st.SessionBytes, st.SessionLimit*9/10, "the budget is used, not refused early")
	for i := 0; i < 100; i++ {
		assert.True(t, has(t, s, fmt.Sprintf("cache:%d", i)), "session data made cache:%d go", i)
	}
}

// Other writes never make session data go, even under allkeys-lru: the
// budget is the sessions' own.
func TestOnlySessionDataMakesSessionDataGo(t *testing.T) {
	s := openSessions(t, kv.MemoryConfig{Limit: 1 << 20, Policy: kv.AllKeysLRU})
	for i := 0; i < 500; i++ {
		_, err := visit(t, s, fmt.Sprintf("s%03d", i), csrf)
		require.NoError(t, err)
	}
	require.Zero(t, stats(t, s).Evictions)
	v := bytes.Repeat([]byte("v"), 1000)
	for i := 0; i < 3000; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("cache:%d", i), v, 0))
	}
	assert.NotZero(t, stats(t, s).Evictions)
	for i := 0; i < 500; i++ {
		assert.True(t, has(t, s, fmt.Sprintf("%ss%03d", dataPrefix, i)))
	}
}

// The data of a session whose lock is there (a request is using it) is
// never evicted; once the lock is released it may be.
func TestAHeldSessionIsNeverEvicted(t *testing.T) {
	s := openSessions(t, kv.MemoryConfig{Limit: MinMemoryLimit, Policy: kv.AllKeysLRU})
	tok := []byte("held-token")
	_, err := s.SetNX(lockPrefix+"held", tok, time.Minute)
	require.NoError(t, err)
	ok, err := s.SetGuarded(dataPrefix+"held", csrf, time.Hour, lockPrefix+"held", tok)
	require.NoError(t, err)
	require.True(t, ok)
	for i := 0; i < 3000; i++ {
		_, err := visit(t, s, fmt.Sprintf("flood%04d", i), csrf)
		require.NoError(t, err)
	}
	require.NotZero(t, stats(t, s).Evictions)
	assert.True(t, has(t, s, dataPrefix+"held"), "evicted while its lock was held")

	ok, err = s.DelIfEq(lockPrefix+"held", tok)
	require.NoError(t, err)
	require.True(t, ok)
	for i := 0; i < 3000 && has(t, s, dataPrefix+"held"); i++ {
		_, err := visit(t, s, fmt.Sprintf("more%04d", i), csrf)
		require.NoError(t, err)
	}
	assert.False(t, has(t, s, dataPrefix+"held"), "a released session that nobody read back is evictable")
}

// Requests that hold their session's lock never lose its data while other
// goroutines, released together, flood the budget: the check of the lock
// and the eviction are one step under the shard lock.
func TestAHeldSessionSurvivesAConcurrentFlood(t *testing.T) {
	s := openSessions(t, kv.MemoryConfig{Limit: MinMemoryLimit, Policy: kv.AllKeysLRU})
	const users, flooders, rounds = 8, 8, 300
	var lost atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := 0; g < users+flooders; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for r := 0; r < rounds; r++ {
				if g >= users {
					if _, err := visit(t, s, fmt.Sprintf("flood-%d-%d", g, r), csrf); err != nil {
						t.Error(err)
					}
					continue
				}
				sid := fmt.Sprintf("user-%d", g)
				lock, tok := lockPrefix+sid, []byte(fmt.Sprintf("tok-%d-%d", g, r))
				if out, err := s.SetNX(lock, tok, time.Minute); err != nil || out != kv.Inserted {
					t.Errorf("lock %s: %v %v", sid, out, err)
					return
				}
				if ok, err := s.SetGuarded(dataPrefix+sid, csrf, time.Hour, lock, tok); err != nil || !ok {
					t.Errorf("write %s: %v %v", sid, ok, err)
					return
				}
				for k := 0; k < 5; k++ {
					if ok, err := s.Exists(dataPrefix + sid); err != nil || !ok {
						lost.Add(1)
					}
				}
				s.DelIfEq(lock, tok)
			}
		}()
	}
	close(start)
	wg.Wait()
	assert.Zero(t, lost.Load(), "data of held sessions evicted")
	st := stats(t, s)
	assert.NotZero(t, st.Evictions)
	assert.LessOrEqual(t, st.SessionBytes, st.SessionLimit, "concurrent writers never pass the budget together")
}

// When the budget is full, sessions written and never read back (a flood's)
// make room before any session whose user came back, so returning users
// keep theirs and a new user can still log in.
func TestSessionsSeenOnceGoBeforeReturningOnes(t *testing.T) {
	s := openSessions(t, kv.MemoryConfig{Limit: 1 << 20, Policy: kv.AllKeysLRU})
	const returning = 50
	for i := 0; i < returning; i++ {
		sid := fmt.Sprintf("user%02d", i)
		_, err := visit(t, s, sid, csrf) // the login page
		require.NoError(t, err)
		found, err := visit(t, s, sid, append(csrf, "user|s:5:\"alice\";"...)) // the login
		require.NoError(t, err)
		require.True(t, found)
	}
	for i := 0; i < 20000; i++ {
		_, err := visit(t, s, fmt.Sprintf("flood%05d", i), csrf)
		require.NoError(t, err)
		if i%2000 == 0 { // returning users come back now and then
			for u := 0; u < returning; u++ {
				found, err := visit(t, s, fmt.Sprintf("user%02d", u), csrf)
				require.NoError(t, err)
				require.True(t, found, "returning user%02d lost its session after %d new ones", u, i)
			}
		}
	}
	require.NotZero(t, stats(t, s).Evictions)
	for u := 0; u < returning; u++ {
		assert.True(t, has(t, s, fmt.Sprintf("%suser%02d", dataPrefix, u)))
	}
	// A new user's login page and login.
	_, err := visit(t, s, "newuser", csrf)
	require.NoError(t, err)
	found, err := visit(t, s, "newuser", csrf)
	require.NoError(t, err)
	assert.True(t, found, "a new user's session was not kept")

	// Once only returning users' sessions are left, they make room too.
	s2 := openWith(t, Options{Memory: kv.MemoryConfig{Limit: MinMemoryLimit, Policy: kv.AllKeysLRU},
		SessionDataPrefix: dataPrefix, SessionLockPrefix: lockPrefix, Dir: t.TempDir()})
	for i := 0; i < 3000; i++ {
		sid := fmt.Sprintf("r%04d", i)
		_, err := visit(t, s2, sid, csrf)
		require.NoError(t, err)
		_, err = visit(t, s2, sid, csrf)
		require.NoError(t, err)
	}
	assert.NotZero(t, stats(t, s2).Evictions)
}

// Under noeviction a session write beyond the budget fails with
// ErrNoMemory, naming the setting, and changes nothing; other keys and
// locks keep working.
func TestSessionBudgetUnderNoEvictionNamesTheSetting(t *testing.T) {
	for _, name := range []string{"", "ephpm.session_memory_limit"} {
		t.Run(name, func(t *testing.T) {
			opts := sessionOptions(kv.MemoryConfig{Limit: 1 << 20, SessionLimit: 16 << 10})
			opts.SessionLimitName = name
			s := openWith(t, opts)
			var err error
			i := 0
			for ; i < 10000 && err == nil; i++ {
				_, err = visit(t, s, fmt.Sprintf("s%05d", i), csrf)
			}
			require.ErrorIs(t, err, kv.ErrNoMemory)
			want := name
			if want == "" {
				want = "session_memory_limit"
			}
			assert.Contains(t, err.Error(), want)
			assert.Contains(t, err.Error(), "16384 bytes")
			assert.False(t, has(t, s, fmt.Sprintf("%ss%05d", dataPrefix, i-1)))
			st := stats(t, s)
			assert.LessOrEqual(t, st.SessionBytes, int64(16<<10))
			assert.Greater(t, st.SessionBytes, int64(15<<10), "refused at the budget, not before")
			assert.Zero(t, st.Evictions)
			require.NoError(t, s.Set("small", []byte("value"), 0))
			_, err = s.SetNX("lock:x", []byte("t"), time.Minute)
			require.NoError(t, err)
		})
	}
}

// However many sessions arrive, under every policy, a small Set and a lock
// never fail.
func TestASessionFloodNeverFailsASetOrALock(t *testing.T) {
	for _, policy := range []kv.Policy{kv.NoEviction, kv.VolatileLRU, kv.AllKeysLRU} {
		t.Run(policy.String(), func(t *testing.T) {
			s := openSessions(t, kv.MemoryConfig{Limit: MinMemoryLimit, Policy: policy})
			for i := 0; i < 3000; i++ {
				_, err := visit(t, s, fmt.Sprintf("flood%05d", i), csrf)
				if policy != kv.NoEviction {
					require.NoError(t, err)
				}
				require.NoError(t, s.Set(fmt.Sprintf("small:%d", i%10), []byte("value"), 0))
				lock := fmt.Sprintf("lock:%d", i%10)
				out, err := s.SetNX(lock, []byte("t"), time.Minute)
				require.NoError(t, err)
				require.Equal(t, kv.Inserted, out)
				ok, err := s.DelIfEq(lock, []byte("t"))
				require.NoError(t, err)
				require.True(t, ok)
			}
			require.NoError(t, s.Set("after", bytes.Repeat([]byte("v"), 1000), 0))
			_, err := s.SetNX("lock:after", bytes.Repeat([]byte("t"), 100), time.Minute)
			require.NoError(t, err)
		})
	}
}

// The budget is segment-wide: what one process configures every process
// applies; it must be below the limit, and a refused setting changes
// nothing.
func TestSessionLimitSetting(t *testing.T) {
	s := openSessions(t, kv.MemoryConfig{Limit: 1 << 20})
	assert.Equal(t, int64(512<<10), stats(t, s).SessionLimit)
	assert.Zero(t, s.MemoryConfig().SessionLimit)
	require.NoError(t, s.SetMemoryConfig(kv.MemoryConfig{SessionLimit: 1<<20 - 1}))
	assert.Equal(t, int64(1<<20-1), stats(t, s).SessionLimit)
	assert.Equal(t, int64(1<<20-1), s.MemoryConfig().SessionLimit)
	err := s.SetMemoryConfig(kv.MemoryConfig{SessionLimit: 1 << 20})
	require.ErrorIs(t, err, kv.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "session_memory_limit")
	assert.ErrorIs(t, s.SetMemoryConfig(kv.MemoryConfig{SessionLimit: -1}), kv.ErrInvalidArgument)
	assert.Equal(t, int64(1<<20-1), stats(t, s).SessionLimit, "a refused setting changes nothing")

	other, err := Open(testName(t), sessionOptions(kv.MemoryConfig{SessionLimit: 64 << 10}))
	require.NoError(t, err)
	defer other.Close()
	assert.Equal(t, int64(64<<10), stats(t, s).SessionLimit, "another process's setting applies to the segment")
	_, err = Open(testName(t), sessionOptions(kv.MemoryConfig{SessionLimit: 2 << 20}))
	require.ErrorIs(t, err, kv.ErrInvalidArgument, "a budget above the segment's limit")
}

// The session rule is the segment's: keys hash by it, so an opener naming
// other prefixes is refused, and one naming none takes the segment's.
func TestTheSessionPrefixesAreTheSegments(t *testing.T) {
	s := openSessions(t, kv.MemoryConfig{Limit: 1 << 20})
	_, err := visit(t, s, "sid", csrf)
	require.NoError(t, err)
	_, err = Open(testName(t), Options{SessionDataPrefix: "other:", SessionLockPrefix: lockPrefix})
	require.ErrorIs(t, err, kv.ErrInvalidArgument)
	assert.Contains(t, err.Error(), s.Path())
	plain, err := Open(testName(t), Options{})
	require.NoError(t, err)
	defer plain.Close()
	v, found := get(t, plain, dataPrefix+"sid")
	require.True(t, found, "found where the segment's rule puts it")
	assert.Equal(t, string(csrf), v)
	_, err = Open("x", Options{Dir: t.TempDir(), SessionDataPrefix: strings.Repeat("p", maxSessPrefix+1)})
	require.ErrorIs(t, err, kv.ErrInvalidArgument)
}

// A session's data and lock hash by the sid: one shard holds both, each
// with a hash (tag) of its own.
func TestASessionsDataAndLockShareAShard(t *testing.T) {
	s := openSessions(t, kv.MemoryConfig{Limit: 8 << 20})
	require.Greater(t, len(s.shards), 1)
	for i := 0; i < 100; i++ {
		sid := fmt.Sprint(i)
		d, dh, _ := s.locate(dataPrefix + sid)
		l, lh, _ := s.locate(lockPrefix + sid)
		require.Same(t, d, l)
		require.NotEqual(t, dh, lh)
	}
}

// A process killed between a session lock's insertion and the tally it
// moves leaves tallies that recovery recomputes: the data is held after.
func TestRecoveryRecountsTheSessionTallies(t *testing.T) {
	s := openSessions(t, kv.MemoryConfig{Limit: 1 << 20, Policy: kv.AllKeysLRU})
	_, err := visit(t, s, "sid", csrf)
	require.NoError(t, err)
	sh, _, tag := s.locate(lockPrefix + "sid")
	atomic.StoreUint32(sh.u32(sLock), deadTag(t, s)) // it died holding the lock...
	// ... having published a lock entry, before any tally.
	_, _, ins := sh.lookup(tag, lockPrefix+"sid")
	b := sh.alloc(entrySize(len(lockPrefix+"sid"), 3))
	sh.writeEntry(b, lockPrefix+"sid", []byte("tok"), flagPinned, 0, 0)
	sh.insertAt(ins, tag, b)
	sh.setState(b, stateLive)
	storeRelI64(sh.sessUsed(), 12345)
	storeRelI64(sh.i64(sEvictNew), -1)
	require.True(t, has(t, s, lockPrefix+"sid"))
	require.NoError(t, s.Check())
	assert.Equal(t, uint64(1), s.Recoveries())
	assert.Zero(t, atomic.LoadInt64(sh.i64(sEvictNew))+atomic.LoadInt64(sh.i64(sEvictRet)), "the data is held")
	st := stats(t, s)
	assert.Equal(t, chargeOf(entrySize(len(dataPrefix+"sid"), len(csrf))), st.SessionBytes)
}
