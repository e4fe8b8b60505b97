package shm

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
)

func grantFenced(t *testing.T, s *Store, name string) int64 {
	t.Helper()
	out, f, err := backend.SetNXFenced(s, name, []byte("tok"), 0)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out, name)
	return f
}

func TestFencesOutliveFlushAndTheSegment(t *testing.T) {
	s := openRemovable(t, testName(t)) // its file is removed below
	f1 := grantFenced(t, s, "lock")
	require.NoError(t, s.Flush())
	f, err := s.Fence("lock")
	require.NoError(t, err)
	assert.Equal(t, f1, f, "Flush keeps fences")
	ok, err := backend.SetFenced(s, "data", []byte("v"), 0, "lock", f1)
	require.NoError(t, err)
	assert.True(t, ok, "nobody was granted since")

	// Another process's view: a second attachment sees the same fences.
	other, err := Open(testName(t), Options{})
	require.NoError(t, err)
	f, _ = other.Fence("lock")
	assert.Equal(t, f1, f)
	f2 := grantFenced(t, other, "lock2")
	other.Close()
	// A segment made again under the same name keeps the fence file, but
	// has a hash seed of its own: the names' old fences sit in the file
	// under their old hashes, as forgotten names, and their next grants
	// are still above them (a fence is at least the wall clock in µs).
	require.NoError(t, os.Remove(s.Path())) // s refuses calls once it sees that (removed.go)
	again, err := Open(testName(t), Options{})
	require.NoError(t, err)
	defer again.Close()
	_, err = os.Stat(fencesPath(s.Path()))
	require.NoError(t, err, "the fence file outlives the segment")
	assert.Greater(t, grantFenced(t, again, "lock"), f1)
	assert.Greater(t, grantFenced(t, again, "lock2"), f2)
}

func TestAFullBucketForgetsItsOldestGrant(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{})
	names := bucketNames(s, fenceWays+2)
	fences := map[string]int64{}
	for _, n := range names {
		fences[n] = grantFenced(t, s, n)
		_, err := s.Del(n)
		require.NoError(t, err)
	}
	ft, err := s.fences()
	require.NoError(t, err)
	for i, n := range names {
		_, known := ft.current(s.g.hashOf(n))
		assert.Equal(t, i >= 2, known, "%s: the two oldest grants are forgotten", n)
	}
	for _, n := range names[:2] {
		f, _ := s.Fence(n)
		assert.GreaterOrEqual(t, f, fences[n], "a forgotten name reports the floor")
		ok, _ := backend.SetFenced(s, "d", []byte("x"), 0, n, fences[n])
		assert.False(t, ok, "a forgotten grant's write is refused")
		assert.Greater(t, grantFenced(t, s, n), fences[n])
		s.Del(n)
	}
	last := names[len(names)-1]
	ok, _ := backend.SetFenced(s, "d", []byte("x"), 0, last, fences[last])
	assert.True(t, ok, "a remembered name's latest grant writes")
}

func TestAFenceFileOfAnotherSizeIsRefused(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{})
	path := fencesPath(s.Path())
	require.NoError(t, os.WriteFile(path, make([]byte, fenceFileSize+8), 0o600))
	defer os.Remove(path)
	_, _, err := backend.SetNXFenced(s, "lock", nil, 0)
	assert.ErrorIs(t, err, ErrIncompatible)
	assert.ErrorIs(t, err, contract.ErrNothingDone, "the message says nothing was granted")
	found, _ := s.Exists("lock")
	assert.False(t, found, "refused before anything changed")
}

// refusedUndone asserts that a fenced call failed for the fence file it
// could not have, with contract.ErrNothingDone (the message says nothing was
// written or granted, not that the outcome is unknown) and none of the
// errors that blame the caller.
func refusedUndone(t *testing.T, err error, cause error, what string) {
	t.Helper()
	require.ErrorIs(t, err, cause, what)
	assert.ErrorIs(t, err, contract.ErrNothingDone, what)
	assert.True(t, strings.HasPrefix(err.Error(), "nothing was written or granted: "), "%s: %v", what, err)
	assert.NotErrorIs(t, err, contract.ErrInvalidArgument, what)
}

// refusedFencedCalls makes every call that needs the fence file fail with
// cause, and checks that none granted or wrote anything.
func refusedFencedCalls(t *testing.T, s *Store, cause error) {
	t.Helper()
	_, _, err := backend.SetNXFenced(s, "lock", []byte("A"), time.Minute)
	refusedUndone(t, err, cause, "SetNXFenced")
	_, _, err = s.LockAttempt("lock", []byte("A"), contract.LockShared, time.Minute, 0)
	refusedUndone(t, err, cause, "LockAttempt")
	_, err = s.Fence("lock")
	refusedUndone(t, err, cause, "Fence")
	_, err = backend.SetFenced(s, "data", []byte("v"), 0, "lock", 1)
	refusedUndone(t, err, cause, "SetFenced")
	for _, key := range []string{"lock", "data"} {
		found, err := s.Exists(key)
		require.NoError(t, err)
		assert.False(t, found, "%s: nothing was written or granted", key)
	}
	require.NoError(t, s.Set("plain", []byte("v"), 0), "calls without fences go on")
}

// A tmpfs with room for the segment and not for its fence file: the
// fenced calls are refused with ENOSPC and say that they did nothing.
func TestAFenceFileWithNoRoomRefusesAndSaysNothingWasDone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	s, err := Open("nofence", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: MinMemoryLimit}})
	require.NoError(t, err, "the segment fits")
	defer s.Close()
	refusedFencedCalls(t, s, unix.ENOSPC)
}

// A fence file this user may not write (EACCES; root may write any).
func TestAFenceFileWithNoAccessRefusesAndSaysNothingWasDone(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root opens a file of mode 0400 for writing")
	}
	s := openTest(t, contract.MemoryConfig{})
	path := fencesPath(s.Path())
	require.NoError(t, os.WriteFile(path, nil, 0o400))
	defer os.Remove(path)
	refusedFencedCalls(t, s, unix.EACCES)
}

// bucketNames returns n lock names of one fence bucket of s.
func bucketNames(s *Store, n int) []string {
	var names []string
	bucket := -1
	for i := 0; len(names) < n; i++ {
		n := fmt.Sprint("n:", i)
		if b := bucketOf(s.g.hashOf(n)); bucket < 0 || b == bucket {
			bucket = b
			names = append(names, n)
		}
	}
	return names
}

func init() { workers["fencecrash"] = fenceCrashWorker }

// fenceCrashWorker takes the test's locks with fences in a loop. Under each
// lock it checks that its fence is above the last one written under that
// lock (a fenced write, which must be accepted), and that its previous
// fence of the lock is refused.
func fenceCrashWorker() {
	s := workerStore()
	if s == nil {
		return
	}
	locks := strings.Split(os.Getenv("FENCE_LOCKS"), ",")
	fmt.Println("ready")
	prev := map[string]int64{}
	dst := make([]byte, 32)
	token := []byte(fmt.Sprint(os.Getpid()))
	for {
		lock := locks[rand.IntN(len(locks))]
		out, f, err := backend.SetNXFenced(s, lock, token, 300*time.Millisecond)
		if err != nil {
			fmt.Println("bad grant:", err)
			continue
		}
		if out != contract.Inserted {
			continue
		}
		n, found, err := s.GetInto("last:"+lock, dst)
		if err != nil {
			fmt.Println("bad get:", err)
		} else if found {
			if last, _ := strconv.ParseInt(string(dst[:n]), 10, 64); f <= last {
				fmt.Printf("bad %s: fence %d after %d\n", lock, f, last)
			}
		}
		// Refused is right only if the lock was granted again since (its
		// TTL passed while this process was slow) or the name forgotten.
		if ok, err := backend.SetFenced(s, "last:"+lock, []byte(strconv.FormatInt(f, 10)), 0, lock, f); err != nil {
			fmt.Println("bad set_fenced:", err)
		} else if !ok {
			ft, _ := s.fences()
			if latest, known := ft.current(s.g.hashOf(lock)); known && latest == f {
				fmt.Printf("bad %s: the holder's fenced write refused\n", lock)
			}
		}
		if p := prev[lock]; p > 0 {
			if ok, _ := backend.SetFenced(s, "last:"+lock, []byte("stale"), 0, lock, p); ok {
				fmt.Printf("bad %s: stale fence %d wrote\n", lock, p)
			}
		}
		prev[lock] = f
		s.DelIfEq(lock, token)
	}
}

// Processes taking fenced locks are SIGKILLed at random moments: every
// grant's fence is still above the last one written under its lock, no
// holder's write is refused, and the shards stay whole.
func TestFencesSurviveKilledProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	s := openTest(t, contract.MemoryConfig{})
	locks := bucketNames(s, fenceWays+3) // more than a bucket holds: ways change hands as processes die
	var mu sync.Mutex
	var bads []string
	start := func() (*worker, chan struct{}) {
		return startReporting(t, "fencecrash", []string{"SHM_NAME=" + testName(t), "FENCE_LOCKS=" + strings.Join(locks, ",")},
			func(l string) {
				mu.Lock()
				bads = append(bads, l)
				mu.Unlock()
			})
	}
	const procs, kills = 4, 200
	killAtRandom(procs, kills, 3*time.Millisecond, start, nil)
	require.NoError(t, s.Check())
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, bads)
	t.Logf("%d kills, %d recoveries", kills, s.Recoveries())
	dst := make([]byte, 32)
	written := 0
	for _, lock := range locks {
		f, err := s.Fence(lock)
		require.NoError(t, err)
		n, found, err := s.GetInto("last:"+lock, dst)
		require.NoError(t, err)
		if found {
			last, _ := strconv.ParseInt(string(dst[:n]), 10, 64)
			assert.GreaterOrEqual(t, f, last, lock)
			written++
		}
	}
	assert.Positive(t, written, "the workers were granted locks")
}
