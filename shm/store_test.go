package shm

import (
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

func get(t *testing.T, s *Store, key string) (string, bool) {
	t.Helper()
	dst := make([]byte, 1<<20)
	n, found, err := s.GetInto(key, dst)
	require.NoError(t, err)
	return string(dst[:n]), found
}

func TestAnEntryLargerThanAShardIsRefused(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	err := s.Set("huge", make([]byte, 2<<20), 0)
	require.ErrorIs(t, err, contract.ErrNoMemory)
	assert.Contains(t, err.Error(), "largest this segment holds")
}

func TestCompressionComparesTheDecompressedValue(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 4 << 20, Compression: true, CompressionMinSize: 64})
	v := []byte(strings.Repeat("compressible ", 1000))
	require.NoError(t, s.Set("k", v, 0))
	st, _ := s.Stats()
	assert.Less(t, st.BytesUsed, int64(len(v)/4), "stored compressed")
	got, _ := get(t, s, "k")
	assert.Equal(t, string(v), got)
	ok, err := s.DelIfEq("k", v[:len(v)-1])
	require.NoError(t, err)
	assert.False(t, ok)
	ok, _ = s.DelIfEq("k", v)
	assert.True(t, ok)
}

func TestConfigureAppliesToEveryAttachment(t *testing.T) {
	a := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	b, err := Open(testName(t), Options{Memory: contract.MemoryConfig{Limit: 1 << 20}})
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, a.SetMemoryConfig(contract.MemoryConfig{Policy: contract.AllKeysLRU, Compression: true}))
	st, _ := b.Stats()
	assert.Equal(t, "allkeys-lru", st.Eviction)
	assert.True(t, st.Compression)
	assert.ErrorIs(t, a.SetMemoryConfig(contract.MemoryConfig{Limit: 999999999}), contract.ErrInvalidArgument)
	assert.NoError(t, a.SetMemoryConfig(contract.MemoryConfig{Limit: 1 << 20}))
}

// deadTag claims a process slot for a process that has exited, as a
// process killed while attached leaves it, and returns its tag.
func deadTag(t *testing.T, s *Store) uint32 {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	pid := cmd.Process.Pid
	for i := 0; i < procSlots; i++ {
		if atomic.CompareAndSwapUint64(s.g.procIdent(i), 0, uint64(pid)<<32|12345) {
			return tagOf(i, atomic.AddUint32(s.g.procGen(i), 1))
		}
	}
	t.Fatal("no free process slot")
	return 0
}

// An overwrite moves the replaced entry's figures (bytes used, evictable,
// evictable with a TTL) to the new one in one step: every combination of
// size, TTL and pinning leaves them equal to a recount.
func TestOverwritesKeepTheFiguresExact(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 16 << 20}, "pin:")
	for i, c := range []struct {
		key  string
		size int
		ttl  time.Duration
	}{
		{"k", 64, 0}, {"k", 64, 0}, {"k", 64, time.Minute}, {"k", 64, time.Minute},
		{"k", 100, time.Minute}, {"k", 10, 0}, {"k", 3000, time.Minute},
		{"pin:k", 64, 0}, {"pin:k", 64, time.Minute}, {"pin:k", 200, 0}, {"pin:k", 200, time.Minute},
	} {
		require.NoError(t, s.Set(c.key, make([]byte, c.size), c.ttl))
		require.NoError(t, s.Check(), "after write %d (%s, %d B, TTL %v)", i, c.key, c.size, c.ttl)
	}
}

// Close waits for the calls in progress on other goroutines (one asleep in
// Wait, others writing and reading in a loop) and detaches only then: none
// of them fails but with the closed error, the waiter returns before Close
// does, and the segment is whole for the process still attached.
func TestCloseWaitsForCallsInProgress(t *testing.T) {
	name := testName(t)
	removeSegment(name)
	t.Cleanup(func() { removeSegment(name) })
	cfg := Options{Memory: contract.MemoryConfig{Limit: 4 << 20}}
	s, err := Open(name, cfg)
	require.NoError(t, err)
	other, err := Open(name, cfg)
	require.NoError(t, err)
	defer other.Close()
	out, err := other.SetNX("held", []byte("t"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)

	var waiterDone atomic.Bool
	waitErr := make(chan error, 1)
	go func() {
		_, err := s.Wait("held", 300*time.Millisecond)
		waiterDone.Store(true)
		waitErr <- err
	}()
	sh, _, _ := s.locate("held")
	// Until the waiter is registered, asleep in Wait; a host that did not
	// run this loop within the wait's 300 ms finds it done (Close then
	// has one call fewer in progress), and does not wait for ever.
	for atomic.LoadUint32(sh.u32(sWaiters)) == 0 && !waiterDone.Load() {
		time.Sleep(time.Millisecond)
	}

	const writers = 4
	ready := make(chan struct{}, writers)
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func() {
			key, dst := "w"+string(rune('a'+w)), make([]byte, 64)
			for i := 0; ; i++ {
				err := s.Set(key, []byte("value"), 0)
				if err == nil {
					_, _, err = s.GetInto(key, dst)
				}
				if err != nil {
					errs <- err
					return
				}
				if i == 0 {
					ready <- struct{}{}
				}
			}
		}()
	}
	for w := 0; w < writers; w++ {
		<-ready
	}
	require.NoError(t, s.Close())
	assert.True(t, waiterDone.Load(), "Close returned while a call was in progress")
	require.NoError(t, <-waitErr)
	for w := 0; w < writers; w++ {
		assert.ErrorIs(t, <-errs, errClosed)
	}
	assert.ErrorIs(t, s.Set("k", []byte("v"), 0), errClosed)
	assert.NoError(t, s.Close(), "a second Close")
	assert.Equal(t, 1, other.Attached())
	assert.NoError(t, other.Check())
}
