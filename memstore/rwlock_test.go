package memstore

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

func TestReadLocksAreNeverEvicted(t *testing.T) {
	s, _ := newTestStore(t)
	v := bytes.Repeat([]byte("v"), 100)
	require.NoError(t, s.Configure(contract.MemoryConfig{Limit: 64 << 10, Policy: contract.AllKeysLRU}))
	out, _, err := s.LockAttempt("rw", []byte("r1"), contract.LockShared, time.Hour, 0)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	out, _, err = s.LockAttempt("ex", []byte("w"), contract.LockExclusive, time.Hour, 0)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	for i := 0; i < 2000; i++ {
		require.NoError(t, s.Set(fmt.Sprint("fill:", i), v, 0))
	}
	require.Positive(t, s.Stats().Evictions)
	mode, n, _ := s.LockInfo("rw")
	assert.Equal(t, contract.LockShared, mode)
	assert.Equal(t, 1, n, "the reader record stays")
	_, n, _ = s.LockInfo("ex")
	assert.Equal(t, 1, n, "the writer's token stays")
}

func TestAReadHoldThatDoesNotFitFailsAndChangesNothing(t *testing.T) {
	s, _ := newTestStore(t)
	out, f1, err := s.LockAttempt("rw", []byte("r1"), contract.LockShared, time.Hour, 0)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	// The limit is what the store holds now: the record cannot grow.
	require.NoError(t, s.Configure(contract.MemoryConfig{Limit: s.Stats().BytesUsed, Policy: contract.NoEviction}))
	_, _, err = s.LockAttempt("rw", bytes.Repeat([]byte("t"), 200), contract.LockShared, time.Hour, 0)
	assert.ErrorIs(t, err, contract.ErrNoMemory)
	_, n, _ := s.LockInfo("rw")
	assert.Equal(t, 1, n, "the record is as it was")
	f, _ := s.Fence("rw")
	assert.Equal(t, f1, f, "a refused grant mints nothing")
	ok, err := s.LockRelease("rw", []byte("r1"))
	require.NoError(t, err)
	assert.True(t, ok, "a release always fits")
}

func TestTheLastReadersReleaseWakesAWriterBehindReaders(t *testing.T) {
	// A writer whose claim refuses new readers may stand in line behind
	// them (each attempt queues it anew); the last reader's release must
	// wake it wherever it stands, not only the oldest waiter.
	s, _ := newTestStore(t)
	out, _, _ := s.LockAttempt("rw", []byte("r1"), contract.LockShared, time.Hour, 0)
	require.Equal(t, contract.Inserted, out)
	out, _, _ = s.LockAttempt("rw", []byte("w"), contract.LockExclusive, time.Hour, time.Hour)
	require.Equal(t, contract.Exists, out, "claimed")
	out, _, _ = s.LockAttempt("rw", []byte("r2"), contract.LockShared, time.Hour, 0)
	require.Equal(t, contract.Exists, out, "refused by the claim")
	woken := make([]bool, 3)
	var wg sync.WaitGroup
	for i := range woken {
		wg.Add(1)
		go func() {
			defer wg.Done()
			woken[i] = s.Wait("rw", 5*hangCatch) // readers first, the writer last
		}()
		require.Eventually(t, func() bool { return s.waitersOf("rw") == i+1 }, hangCatch, time.Millisecond)
	}
	ok, _ := s.LockRelease("rw", []byte("r1"))
	require.True(t, ok)
	wg.Wait()
	assert.Equal(t, []bool{true, true, true}, woken, "every waiter woke")
	out, _, _ = s.LockAttempt("rw", []byte("w"), contract.LockExclusive, time.Hour, time.Hour)
	assert.Equal(t, contract.Inserted, out, "the claim alone: the writer's")
}

func TestASharedGrantWakesTheNextWaiter(t *testing.T) {
	s, _ := newTestStore(t)
	out, _, _ := s.LockAttempt("rw", []byte("w"), contract.LockExclusive, time.Hour, 0)
	require.Equal(t, contract.Inserted, out)
	var wg sync.WaitGroup
	woken := make([]bool, 2)
	for i := range woken {
		wg.Add(1)
		go func() {
			defer wg.Done()
			woken[i] = s.Wait("rw", 5*hangCatch)
		}()
		require.Eventually(t, func() bool { return s.waitersOf("rw") == i+1 }, hangCatch, time.Millisecond)
	}
	ok, _ := s.LockRelease("rw", []byte("w"))
	require.True(t, ok, "wakes the oldest waiter")
	require.Eventually(t, func() bool { return s.waitersOf("rw") == 1 }, hangCatch, time.Millisecond)
	out, _, _ = s.LockAttempt("rw", []byte("r1"), contract.LockShared, time.Hour, 0)
	require.Equal(t, contract.Inserted, out, "a reader enters, which wakes the next")
	wg.Wait()
	assert.Equal(t, []bool{true, true}, woken)
}

// waitersOf is how many callers wait on key.
func (s *Store) waitersOf(key string) int {
	sh, _, _ := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if q := sh.waiters[key]; q != nil {
		return len(q.list)
	}
	return 0
}
