package shm

import (
	"fmt"
	"os"
	"os/exec"
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

// anchorProcess starts a process to anchor segments to, and returns its
// pid and a function that ends it (and reaps it: a dead anchor).
func anchorProcess(t *testing.T) (int, func()) {
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	end := func() { cmd.Process.Kill(); cmd.Wait() }
	t.Cleanup(end)
	return cmd.Process.Pid, end
}

func exists(path string) bool { _, err := os.Lstat(path); return err == nil }

func TestAnAnchoredSegmentLivesWhileItsAnchorOrAProcessDoes(t *testing.T) {
	dir := t.TempDir()
	master, masterDies := anchorProcess(t)
	other, _ := anchorProcess(t)
	opts := Options{Dir: dir, Memory: contract.MemoryConfig{Limit: small}, Anchor: master}
	path := Path(dir, "pool")

	a, err := Open("pool", opts)
	require.NoError(t, err)
	require.NoError(t, a.Set("k", []byte("v"), 0))
	b, err := Open("pool", opts) // another worker of the same master
	require.NoError(t, err)
	_, err = Open("pool", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: small}, Anchor: other})
	assert.ErrorContains(t, err, "two servers would share it", "another live server is refused")
	c, err := Open("pool", Options{Dir: dir}) // a CLI script naming it
	require.NoError(t, err)
	require.NoError(t, b.Close())
	require.NoError(t, c.Close())

	// Workers come and go (pm=ondemand): the segment stays while the master lives.
	require.NoError(t, a.Close())
	sweep(dir)
	require.True(t, exists(path), "the anchor lives")
	a, err = Open("pool", opts)
	require.NoError(t, err)
	v, found := get(t, a, "k")
	assert.True(t, found)
	assert.Equal(t, "v", v)

	// The master dies: while a worker is attached the segment stays, and a
	// new master's worker takes it over.
	masterDies()
	sweep(dir)
	require.True(t, exists(path), "a process is attached")
	d, err := Open("pool", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: small}, Anchor: other})
	require.NoError(t, err, "a dead anchor is replaced")
	require.NoError(t, d.Close())
	require.NoError(t, a.Close())
	sweep(dir)
	require.True(t, exists(path), "its new anchor lives")
}

func TestTheNextOpenRemovesAStaleSegment(t *testing.T) {
	dir := t.TempDir()
	master, masterDies := anchorProcess(t)
	s, err := Open("stale", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: small}, Anchor: master})
	require.NoError(t, err)
	out, oldFence, err := backend.SetNXFenced(s, "lock", []byte("t"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	named, err := Open("named", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: small}})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, named.Close())
	masterDies()

	// A file the sweep must leave: a flock held by a process it cannot see
	// in the table (as a process between open and attach holds one).
	holder, holderDies := anchorProcess(t)
	held, err := Open("held", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: small}, Anchor: holder})
	require.NoError(t, err)
	fd, err := unix.Open(Path(dir, "held"), unix.O_RDONLY, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	require.NoError(t, unix.Flock(fd, unix.LOCK_SH))
	require.NoError(t, held.Close())
	holderDies()

	// A file a creator killed early left: no magic, nobody holds it.
	require.NoError(t, os.WriteFile(Path(dir, "half"), make([]byte, 4096), 0o600))

	other, err := Open("other", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: small}})
	require.NoError(t, err)
	defer other.Close()
	assert.False(t, exists(Path(dir, "stale")), "anchor dead, nobody attached: removed")
	assert.False(t, exists(fencesPath(Path(dir, "stale"))), "its fence file with it")
	again, err := Open("stale", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: small}})
	require.NoError(t, err)
	defer again.Close()
	_, newFence, err := backend.SetNXFenced(again, "lock", []byte("t"), time.Minute)
	require.NoError(t, err)
	assert.Greater(t, newFence, oldFence, "fences made after the removal start from the clock")
	assert.True(t, exists(Path(dir, "named")), "a segment without an anchor is never removed")
	assert.True(t, exists(Path(dir, "held")), "a segment a process holds is not removed")
	assert.False(t, exists(Path(dir, "half")), "a file that never became a segment is removed")
}

func TestAnUnusedDefaultSegmentOfAnotherLayoutIsMadeAnew(t *testing.T) {
	dir := t.TempDir()
	path := Path(dir, "old")
	s, err := Open("old", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: small}, Anchor: os.Getpid()})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{99, 0, 0, 0}, hVersion) // what an older or newer library made
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, err = Open("old", Options{Dir: dir})
	assert.ErrorIs(t, err, ErrIncompatible, "named without an anchor: never changed")
	s, err = Open("old", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: small}, Anchor: os.Getpid()})
	require.NoError(t, err, "the pool's default segment, unused: made anew")
	defer s.Close()
	require.NoError(t, s.Check())

	// While a process holds it, it is not replaced.
	f, err = os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteAt([]byte{99, 0, 0, 0}, hVersion)
	require.NoError(t, err)
	_, err = Open("old", Options{Dir: dir, Anchor: os.Getpid()})
	assert.ErrorIs(t, err, ErrIncompatible)
}

// A tmpfs too small for the segment: an error at open that says so, never
// a SIGBUS when a page is first touched.
func TestAFullTmpfsIsAnErrorAtOpen(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	_, err := Open("big", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: 4 << 20}})
	require.Error(t, err)
	assert.ErrorIs(t, err, unix.ENOSPC)
	assert.ErrorContains(t, err, "/dev/shm")
	assert.NotErrorIs(t, err, contract.ErrInvalidArgument, "not the caller's fault: the outcome is unavailable")
	assert.False(t, exists(Path(dir, "big")), "no file is left behind")
	s, err := Open("fits", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: MinMemoryLimit}})
	require.NoError(t, err, "a segment that fits opens")
	require.NoError(t, s.Set("k", make([]byte, 1000), 0))
	require.NoError(t, s.Close())
}

// Openers racing to create one segment all get it: none waits for an
// exclusive flock, which a process attached to a ready segment never
// gives up (a creator that lost the race to initialise waited forever).
func TestRacingCreatorsAllOpen(t *testing.T) {
	dir := t.TempDir()
	for round := 0; round < 20; round++ {
		name := fmt.Sprintf("race%d", round)
		const openers = 6
		var start, done sync.WaitGroup
		start.Add(1)
		errs := make(chan error, openers)
		for i := 0; i < openers; i++ {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				s, err := Open(name, Options{Dir: dir, Memory: contract.MemoryConfig{Limit: small}})
				if err == nil {
					t.Cleanup(func() { s.Close() })
				}
				errs <- err
			}()
		}
		start.Done()
		finished := make(chan struct{})
		go func() { done.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-time.After(hangLimit):
			t.Fatalf("round %d: an opener is still waiting", round)
		}
		close(errs)
		for err := range errs {
			require.NoError(t, err, "round %d", round)
		}
	}
}
