package shm

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// testName is a segment name for t, unique to this test process.
func testName(t *testing.T) string {
	n := "t" + strconv.Itoa(os.Getpid()) + "-" + unsafeChars.ReplaceAllString(t.Name(), "_")
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// openTest opens a fresh segment for t with cfg, closed and removed when
// t ends, after its integrity is checked.
func openTest(t *testing.T, cfg contract.MemoryConfig, pinned ...string) *Store {
	t.Helper()
	return openWith(t, Options{Memory: cfg, PinnedPrefixes: pinned})
}

// openWith is openTest with every option.
func openWith(t *testing.T, opts Options) *Store {
	t.Helper()
	name := testName(t)
	path := Path("", name)
	os.Remove(path)
	os.Remove(fencesPath(path))
	s, err := openForTest(name, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := s.Check(); err != nil {
			t.Errorf("integrity: %v", err)
		}
		s.Close()
		os.Remove(path)
		os.Remove(fencesPath(path))
	})
	return s
}

func removeSegment(name string) {
	os.Remove(Path("", name))
	os.Remove(fencesPath(Path("", name)))
}

// startReporting starts worker name with env, closes ready when it prints
// "ready" and hands each other line it prints to report, on a goroutine of
// its own.
func startReporting(t *testing.T, name string, env []string, report func(line string)) (w *worker, ready chan struct{}) {
	t.Helper()
	w = startWorker(t, name, env)
	ready = make(chan struct{})
	go func() {
		for l := range w.lines {
			if l == "ready" {
				close(ready)
				continue
			}
			report(l)
		}
	}()
	return w, ready
}

// killAtRandom runs procs workers made by start, kills times SIGKILLs one
// of them (in turn) a random moment of up to maxDelay after it was ready
// and starts it again, calling after(k) with the kills so far; then it
// kills them all.
func killAtRandom(procs, kills int, maxDelay time.Duration, start func() (*worker, chan struct{}), after func(k int)) {
	ws := make([]*worker, procs)
	readies := make([]chan struct{}, procs)
	for i := range ws {
		ws[i], readies[i] = start()
	}
	for k := 0; k < kills; k++ {
		i := k % procs
		<-readies[i]
		time.Sleep(time.Duration(rand.Int64N(int64(maxDelay))))
		ws[i].cmd.Process.Signal(syscall.SIGKILL)
		ws[i].cmd.Wait()
		ws[i], readies[i] = start()
		if after != nil {
			after(k + 1)
		}
	}
	for i := range ws {
		<-readies[i]
		ws[i].cmd.Process.Signal(syscall.SIGKILL)
		ws[i].cmd.Wait()
	}
}

// workerStore opens the segment SHM_NAME in a worker process; if it
// cannot, it prints "bad open: ERR" and returns nil.
func workerStore() *Store {
	s, err := Open(os.Getenv("SHM_NAME"), Options{})
	if err != nil {
		fmt.Println("bad open:", err)
		return nil
	}
	return s
}

// waitSlotOf returns the wait slot of the one caller waiting on key.
func waitSlotOf(t *testing.T, s *Store, key string) int {
	t.Helper()
	sh, h, _ := s.locate(key)
	slot := -1
	for i := 0; i < waitSlots; i++ {
		if ctlState(atomic.LoadUint64(s.g.waitCtl(i))) == wWaiting &&
			atomic.LoadUint32(s.g.waitShard(i)) == uint32(sh.i) && atomic.LoadUint64(s.g.waitHash(i)) == h {
			require.Equal(t, -1, slot, "one caller waits on %q", key)
			slot = i
		}
	}
	require.NotEqual(t, -1, slot, "a caller waits on %q", key)
	return slot
}

// sleepOnStoreClock sleeps until d has passed on the clock the store keeps
// TTLs on (expiryNow) since it was called: a TTL of at most d granted
// before the call has lapsed when it returns, however the coarse clock
// lags the precise one on this host.
func sleepOnStoreClock(d time.Duration) {
	end := expiryNow() + int64(d)
	for expiryNow() < end {
		time.Sleep(time.Millisecond)
	}
}

// sessionGrants is the store as the session handler takes a session's
// lock: each grant records this process as the lock's holder (a Step with
// Bound, as backend.SetNXGet takes it), so that the lock lapses once the
// process is dead (entry.go).
type sessionGrants struct{ *Store }

func (g sessionGrants) SetNX(key string, value []byte, ttl time.Duration) (contract.SetNXOutcome, error) {
	st := contract.Step{Lock: key, Token: value, LockTTL: ttl, Acquire: true, Bound: true}
	err := g.Step(&st)
	return st.Outcome, err
}

// SetFencedToken is backend.SetFencedRelease without the release: the
// fenced write of token's holder.
func (s *Store) SetFencedToken(key string, value []byte, ttl time.Duration, lock string, fence int64, token []byte) (bool, error) {
	st := contract.Step{Lock: lock, Token: token, Guard: contract.GuardFenceHolder, Fence: fence, Action: contract.ActionSet, Key: key, Value: value, TTL: ttl}
	err := s.Step(&st)
	return st.Held, err
}
