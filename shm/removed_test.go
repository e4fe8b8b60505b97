package shm

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
)

// openRemovable opens segment name for a test that removes its file under
// it: the files of an earlier run are removed first, and those left
// removed, and the store closed, when t ends (without openTest's integrity
// check, which a store refusing every call cannot answer). A store opened
// after the removal, of the new file, is opened with it too.
func openRemovable(t *testing.T, name string) *Store {
	t.Helper()
	path := Path("", name)
	os.Remove(path)
	os.Remove(fencesPath(path))
	s, err := Open(name, Options{Memory: contract.MemoryConfig{Limit: 1 << 20}})
	require.NoError(t, err)
	t.Cleanup(func() {
		s.Close()
		os.Remove(path)
		os.Remove(fencesPath(path))
	})
	return s
}

// waitCheckDue waits until s's next call checks its file (removed.go).
func waitCheckDue(t *testing.T, s *Store) {
	t.Helper()
	for deadline := time.Now().Add(hangLimit); s.check.Load() != checkDue; {
		require.True(t, time.Now().Before(deadline), "the check never came due")
		time.Sleep(time.Millisecond)
	}
}

// requireRemoved checks that err is the refusal of a store whose file was
// removed, naming the file, the cause and the fix.
func requireRemoved(t *testing.T, err error, path, what string) {
	t.Helper()
	require.Error(t, err, what)
	require.ErrorIs(t, err, ErrSegmentRemoved, what)
	require.ErrorIs(t, err, contract.ErrNothingDone, what)
	require.True(t, strings.HasPrefix(err.Error(), contract.ErrNothingDone.Error()+": "), "%s: %v", what, err)
	for _, s := range []string{path, "RemoveIPC=yes", "RemoveIPC=no", "logind.conf", "restart"} {
		require.Contains(t, err.Error(), s, what)
	}
}

// TestARemovedSegmentGrantsNoSecondHolder: systemd-logind (RemoveIPC=yes)
// removes the segment's file while process A maps it and holds a lock; a
// new process B opens the name, gets a new segment, and is granted that
// lock and another. A is never told it holds either: from its first call
// once the check is due, every call it makes fails with an error naming
// the cause and the fix, among them the refresh and the guarded write of
// the lock it held and set_nx of the lock B holds, which it would
// otherwise be granted too.
func TestARemovedSegmentGrantsNoSecondHolder(t *testing.T) {
	name := testName(t)
	path := Path("", name)
	a := openRemovable(t, name)
	out, err := a.SetNX("lock", []byte("a"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	require.NoError(t, a.Set("k", []byte("v"), 0))

	require.NoError(t, os.Remove(path)) // what logind does
	b := openRemovable(t, name)
	for _, lock := range []string{"lock", "lock2"} {
		out, err = b.SetNX(lock, []byte("b"), time.Minute)
		require.NoError(t, err)
		require.Equal(t, contract.Inserted, out, "the new segment grants %s", lock)
	}

	waitCheckDue(t, a)
	_, err = a.SetNX("lock2", []byte("a"), time.Minute)
	requireRemoved(t, err, path, "set_nx of the lock the new segment granted")
	_, err = a.ExpireIfEq("lock", []byte("a"), time.Minute)
	requireRemoved(t, err, path, "the refresh of the lock A held")
	_, err = backend.SetGuarded(a, "k", []byte("w"), 0, "lock", []byte("a"))
	requireRemoved(t, err, path, "a write guarded by the lock A held")
	_, _, err = a.LockAttempt("rw", []byte("a"), contract.LockShared, time.Minute, 0)
	requireRemoved(t, err, path, "a read lock")
	_, _, err = a.GetInto("k", make([]byte, 8))
	requireRemoved(t, err, path, "a get")
	requireRemoved(t, a.Set("k", []byte("x"), 0), path, "a set")
	requireRemoved(t, a.Revalidate(), path, "the request-start check")

	// The new segment is untouched by A: one holder of each lock.
	v, found := get(t, b, "lock2")
	assert.True(t, found)
	assert.Equal(t, "b", v)
	_, found = get(t, b, "k")
	assert.False(t, found, "A's value is in the old segment only")
	require.NoError(t, b.Revalidate(), "the new segment's own file is in place")
}

// TestARequestStartSeesTheRemovalAtOnce: the host's check at a request's
// start (Revalidate) finds the file gone with no wait for the interval, and
// the request's first call is refused.
func TestARequestStartSeesTheRemovalAtOnce(t *testing.T) {
	name := testName(t)
	path := Path("", name)
	a := openRemovable(t, name)
	require.NoError(t, a.Revalidate())
	require.NoError(t, os.Remove(path))
	requireRemoved(t, a.Revalidate(), path, "the request-start check")
	_, err := a.SetNX("lock", []byte("a"), time.Minute)
	requireRemoved(t, err, path, "the request's first call")
}

// TestASegmentFileKeptUnderAnotherNameCounts: the path no longer naming
// the mapped file counts as its removal even while the file has another
// link (its link count is not 0), and so does a different file put at the
// path.
func TestASegmentFileKeptUnderAnotherNameCounts(t *testing.T) {
	name := testName(t)
	path := Path("", name)
	a := openRemovable(t, name)
	kept := path + ".kept"
	require.NoError(t, os.Link(path, kept))
	t.Cleanup(func() { os.Remove(kept) })
	require.NoError(t, os.Remove(path))
	openRemovable(t, name) // another file at the path
	err := a.Revalidate()
	requireRemoved(t, err, path, "a file at the path that is not the one mapped")
	assert.Contains(t, err.Error(), "replaced by another file")
}

// TestAnUntouchedSegmentKeepsServing: the checks find nothing while the
// file stays: calls go on across many intervals.
func TestAnUntouchedSegmentKeepsServing(t *testing.T) {
	a := openRemovable(t, testName(t))
	for i := 0; i < 3; i++ {
		waitCheckDue(t, a)
		require.NoError(t, a.Set("k", []byte("v"), 0))
		require.NoError(t, a.Revalidate())
	}
	assert.Equal(t, uint32(checkNotDue), a.check.Load(), "the check ran and found the file in place")
}

// BenchmarkRevalidate is the check of the segment's file, as a request's
// start makes it and as the first call after each checkInterval does.
func BenchmarkRevalidate(b *testing.B) {
	s := benchStore(b)
	for b.Loop() {
		if err := s.Revalidate(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAGoneFoundByRevalidateIsNotUndoneByACheckInFlight: a call's
// periodic check (checkDue) passes; before it records that, Revalidate in
// another goroutine finds the file removed. The check in flight must not
// undo that: every call after Revalidate's refusal is refused too (that
// call included, which has taken no lock yet).
// checkPassedHook forces the interleaving.
func TestAGoneFoundByRevalidateIsNotUndoneByACheckInFlight(t *testing.T) {
	name := testName(t)
	path := Path("", name)
	s := openRemovable(t, name)
	require.NoError(t, s.Set("k", []byte("v"), 0))
	var revalidated error
	checkPassedHook = func() {
		checkPassedHook = nil
		require.NoError(t, os.Remove(path))
		revalidated = s.Revalidate()
	}
	t.Cleanup(func() { checkPassedHook = nil })
	s.check.Store(checkDue) // as the timer marks it
	// The call whose check was in flight took no lock yet: it is refused too.
	err := s.Set("k", []byte("w"), 0)
	requireRemoved(t, revalidated, path, "Revalidate")
	requireRemoved(t, err, path, "the call whose check was in flight")
	_, _, err = s.GetInto("k", make([]byte, 8))
	requireRemoved(t, err, path, "a get after Revalidate found the file gone")
	requireRemoved(t, s.Set("k", []byte("x"), 0), path, "a set after Revalidate found the file gone")
}

// TestAFlushRefusedAfterItsFirstShardSaysItDidSomething: Flush empties
// one shard at a time; refused at a later shard (the file found removed
// meanwhile), it has emptied the first ones, so its error must not say
// that nothing was written (contract.ErrNothingDone), though it is still
// ErrSegmentRemoved. Refused at its first shard it did nothing, and says
// so. The test holds shard 1's lock until Flush waits for it (the lock
// word's contended bit), then removes the file and revalidates: Flush,
// past shard 1's check, empties it and is refused at shard 2.
func TestAFlushRefusedAfterItsFirstShardSaysItDidSomething(t *testing.T) {
	name := testName(t)
	path := Path("", name)
	os.Remove(path)
	os.Remove(fencesPath(path))
	s, err := Open(name, Options{Memory: contract.MemoryConfig{Limit: 4 << 20}})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close(); os.Remove(path); os.Remove(fencesPath(path)) })
	require.GreaterOrEqual(t, len(s.shards), 3)

	sh1 := &s.shards[1]
	require.NoError(t, s.lock(sh1))
	res := make(chan error, 1)
	go func() { res <- s.Flush() }()
	for deadline := time.Now().Add(hangLimit); atomic.LoadUint32(sh1.u32(sLock))&contended == 0; runtime.Gosched() {
		require.True(t, time.Now().Before(deadline), "Flush never waited for shard 1")
	}
	require.NoError(t, os.Remove(path))
	require.Error(t, s.Revalidate())
	s.unlock(sh1)
	select {
	case err = <-res:
	case <-time.After(hangLimit):
		t.Fatal("Flush did not return")
	}
	require.ErrorIs(t, err, ErrSegmentRemoved)
	require.False(t, errors.Is(err, contract.ErrNothingDone), "%v", err)
	require.False(t, strings.HasPrefix(err.Error(), contract.ErrNothingDone.Error()), "%v", err)
	require.Contains(t, err.Error(), path)

	// Refused at its first shard: nothing done, and said.
	requireRemoved(t, s.Flush(), path, "a Flush refused before any shard")
}
