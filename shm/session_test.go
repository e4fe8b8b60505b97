package shm

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/sessionkeys"
)

// Session data on a segment: the rules memstore has
// (backendtest.RunSessionBudget) and what is the segment's own (its rule and
// budget shared by every process, the tallies recovery recomputes).

const (
	dataPrefix = sessionkeys.DataPrefix
	lockPrefix = sessionkeys.LockPrefix
)

func sessionOptions(cfg contract.MemoryConfig) Options {
	return Options{Memory: cfg, SessionDataPrefix: dataPrefix, SessionLockPrefix: lockPrefix}
}

// TestSessionBudgetRules runs the session rules on segments, 4 MiB of
// them over 4 shards.
func TestSessionBudgetRules(t *testing.T) {
	backendtest.RunSessionBudget(t, func(t *testing.T, cfg contract.MemoryConfig, limitName string) backend.Backend {
		opts := sessionOptions(cfg)
		opts.Dir, opts.SessionLimitName = t.TempDir(), limitName
		s, err := Open("sessions", opts)
		require.NoError(t, err)
		t.Cleanup(func() {
			if err := s.Check(); err != nil {
				t.Errorf("integrity: %v", err)
			}
			s.Close()
		})
		return s
	})
}

func openSessions(t *testing.T, cfg contract.MemoryConfig) *Store {
	t.Helper()
	return openWith(t, sessionOptions(cfg))
}

func has(t *testing.T, s *Store, key string) bool {
	t.Helper()
	ok, err := s.Exists(key)
	require.NoError(t, err)
	return ok
}

func stats(t *testing.T, s *Store) contract.Stats {
	t.Helper()
	st, err := s.Stats()
	require.NoError(t, err)
	return st
}

var csrf = []byte(`csrf|s:64:"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";`)

// The budget is segment-wide: what one process configures every process
// applies; it must be below the limit, and a refused setting changes
// nothing.
func TestSessionLimitSetting(t *testing.T) {
	s := openSessions(t, contract.MemoryConfig{Limit: 1 << 20})
	assert.Equal(t, int64(512<<10), stats(t, s).SessionLimit)
	assert.Zero(t, s.MemoryConfig().SessionLimit)
	require.NoError(t, s.SetMemoryConfig(contract.MemoryConfig{SessionLimit: 1<<20 - 1}))
	assert.Equal(t, int64(1<<20-1), stats(t, s).SessionLimit)
	assert.Equal(t, int64(1<<20-1), s.MemoryConfig().SessionLimit)
	err := s.SetMemoryConfig(contract.MemoryConfig{SessionLimit: 1 << 20})
	require.ErrorIs(t, err, contract.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "session_memory_limit")
	assert.ErrorIs(t, s.SetMemoryConfig(contract.MemoryConfig{SessionLimit: -1}), contract.ErrInvalidArgument)
	assert.Equal(t, int64(1<<20-1), stats(t, s).SessionLimit, "a refused setting changes nothing")

	other, err := Open(testName(t), sessionOptions(contract.MemoryConfig{SessionLimit: 64 << 10}))
	require.NoError(t, err)
	defer other.Close()
	assert.Equal(t, int64(64<<10), stats(t, s).SessionLimit, "another process's setting applies to the segment")
	_, err = Open(testName(t), sessionOptions(contract.MemoryConfig{SessionLimit: 2 << 20}))
	require.ErrorIs(t, err, contract.ErrInvalidArgument, "a budget above the segment's limit")
}

// The session rule is the segment's: keys hash by it, so an opener naming
// other prefixes is refused, and one naming none takes the segment's.
func TestTheSessionPrefixesAreTheSegments(t *testing.T) {
	s := openSessions(t, contract.MemoryConfig{Limit: 1 << 20})
	require.NoError(t, s.Set(dataPrefix+"sid", csrf, time.Hour))
	_, err := Open(testName(t), Options{SessionDataPrefix: "other:", SessionLockPrefix: lockPrefix})
	require.ErrorIs(t, err, contract.ErrInvalidArgument)
	assert.Contains(t, err.Error(), s.Path())
	plain, err := Open(testName(t), Options{})
	require.NoError(t, err)
	defer plain.Close()
	v, found := get(t, plain, dataPrefix+"sid")
	require.True(t, found, "found where the segment's rule puts it")
	assert.Equal(t, string(csrf), v)
	_, err = Open("x", Options{Dir: t.TempDir(), SessionDataPrefix: strings.Repeat("p", maxSessPrefix+1)})
	require.ErrorIs(t, err, contract.ErrInvalidArgument)
}

// A session's data and lock hash by the sid: one shard holds both, each
// with a hash (tag) of its own.
func TestASessionsDataAndLockShareAShard(t *testing.T) {
	s := openSessions(t, contract.MemoryConfig{Limit: 8 << 20})
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
	s := openSessions(t, contract.MemoryConfig{Limit: 1 << 20, Policy: contract.AllKeysLRU})
	require.NoError(t, s.Set(dataPrefix+"sid", csrf, time.Hour))
	sh, _, tag := s.locate(lockPrefix + "sid")
	atomic.StoreUint32(sh.u32(sLock), deadTag(t, s)) // it died holding the lock...
	// ... having published a lock entry, before any tally.
	_, _, ins := sh.lookup(tag, lockPrefix+"sid")
	b := sh.alloc(entrySize(len(lockPrefix+"sid"), 3))
	sh.writeEntry(b, lockPrefix+"sid", []byte("tok"), flagPinned, 0, 0, 0)
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
