package shm

import (
	"encoding/binary"
	"flag"
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

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/sessionkeys"
)

var crashKills = flag.Int("shm.kills", 1000, "SIGKILLs the crash test deals its workers")

const (
	crashWorkers  = 4
	crashCounters = 4 // counters per worker
	crashKeys     = 64
	crashPhases   = 10
	crashTail     = 20 // lines of each worker kept to print on failure
)

// crashOptions are the segment's options in the crash test and its
// workers: eviction and lz4 on, a session budget small enough that session
// writes evict sessions.
var crashOptions = Options{
	Memory:         contract.MemoryConfig{Limit: 16 << 20, SessionLimit: 256 << 10, Policy: contract.AllKeysLRU, Compression: true, CompressionMinSize: 64},
	PinnedPrefixes: []string{"ctr:"}, SessionDataPrefix: sessionkeys.DataPrefix, SessionLockPrefix: sessionkeys.LockPrefix,
}

func init() {
	workers["crash"] = crashWorker
	workers["noise"] = noiseWorker
}

// crashValue is value number seed of n bytes: self-describing, so that a
// reader can tell it whole from a mix of two writes. Half are periodic
// (lz4 shrinks them), half pseudo-random (stored plain).
func crashValue(seed uint64, n int) []byte {
	v := make([]byte, n)
	if n < 12 {
		for i := range v {
			v[i] = byte('a' + n)
		}
		return v
	}
	binary.LittleEndian.PutUint32(v, uint32(n))
	binary.LittleEndian.PutUint64(v[4:], seed)
	fillPattern(seed, v[12:])
	return v
}

func fillPattern(seed uint64, p []byte) {
	x := seed | 1
	for i := range p {
		if seed&1 == 0 {
			p[i] = byte(i % 61)
			continue
		}
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p[i] = byte(x)
	}
}

// crashValueOK reports whether v is whole.
func crashValueOK(v []byte) bool {
	n := len(v)
	if n < 12 {
		for _, c := range v {
			if c != byte('a'+n) {
				return false
			}
		}
		return true
	}
	if int(binary.LittleEndian.Uint32(v)) != n {
		return false
	}
	want := make([]byte, n-12)
	fillPattern(binary.LittleEndian.Uint64(v[4:]), want)
	return string(want) == string(v[12:])
}

func randomSize() int {
	switch rand.IntN(4) {
	case 0:
		return 1 + rand.IntN(16)
	case 1:
		return 1 + rand.IntN(512)
	case 2:
		return 1 + rand.IntN(8<<10)
	}
	return 1 + rand.IntN(64<<10)
}

// crashWorker runs a mixed load on the segment until it is killed. It
// prints "ready" once attached, "ack C V" after each increment of counter C
// acknowledged with V, "max NS OP" whenever its slowest store call so far
// grows (building and checking values is not timed), "dead NS" whenever its
// longest wait for a dead owner's shard grows, and "bad ..." for anything
// the contract forbids.
func crashWorker() {
	id := os.Getenv("SHM_ID")
	s, err := Open(os.Getenv("SHM_NAME"), crashOptions)
	if err != nil {
		fmt.Println("bad open:", err)
		return
	}
	fmt.Println("ready")
	var slowest, dead time.Duration
	dst := make([]byte, 64<<10)
	token := []byte(id + ":" + strconv.Itoa(os.Getpid()))
	bad := func(format string, args ...any) { fmt.Printf("bad "+format+"\n", args...) }
	// mine reports whether a lock of 1 s granted after the store's clock
	// read since cannot have lapsed yet: a refusal is a breach only then
	// (a worker the host stalls past the TTL has lost its lock, rightly).
	mine := func(since int64) bool { return expiryNow()-since < int64(time.Second) }
	var took time.Duration // the store calls' time in this round
	timed := func(f func()) {
		start := time.Now()
		f()
		took += time.Since(start)
	}
	for {
		key := fmt.Sprintf("k:%d", rand.IntN(crashKeys))
		took = 0
		var err error
		op := rand.IntN(len(crashOps))
		switch op {
		case 0, 1:
			ttl := time.Duration(0)
			if rand.IntN(3) == 0 {
				ttl = time.Duration(1+rand.IntN(300)) * time.Millisecond
			}
			v := crashValue(rand.Uint64(), randomSize())
			timed(func() { err = s.Set(key, v, ttl) })
		case 2, 3:
			var n int
			var found bool
			timed(func() { n, found, err = s.GetInto(key, dst) })
			if err == nil && found && n <= len(dst) && !crashValueOK(dst[:n]) {
				bad("get %s: a value of %d bytes that no write wrote", key, n)
			}
		case 4:
			c := rand.IntN(crashCounters)
			ctr := fmt.Sprintf("ctr:%s:%d", id, c)
			var v int64
			timed(func() { v, err = s.IncrBy(ctr, 1, 0) })
			if err == nil {
				fmt.Printf("ack %d %d\n", c, v)
			}
		case 5:
			lock := fmt.Sprintf("lock:%d", rand.IntN(8))
			var out contract.SetNXOutcome
			since := expiryNow()
			timed(func() { out, err = s.SetNX(lock, token, time.Second) })
			if err == nil && out == contract.Inserted {
				var ok bool
				v := crashValue(rand.Uint64(), randomSize())
				timed(func() { ok, err = backend.SetGuarded(s, "data:"+lock, v, time.Minute, lock, token) })
				if err == nil && !ok && mine(since) {
					bad("set_guarded under my own lock %s refused", lock)
				}
				if err == nil {
					renewed := expiryNow()
					timed(func() { ok, err = s.ExpireIfEq(lock, token, time.Second) })
					if err == nil && !ok && mine(since) {
						bad("expire_if_eq of my own lock %s refused", lock)
					}
					if ok {
						since = renewed
					}
				}
				if err == nil {
					timed(func() { ok, err = s.DelIfEq(lock, token) })
					if err == nil && !ok && mine(since) {
						bad("del_if_eq of my own lock %s refused", lock)
					}
				}
			}
		case 6:
			timed(func() { _, err = s.DelIfEq(key, []byte("no such value")) })
		case 7:
			ttl := time.Duration(rand.IntN(500)) * time.Millisecond
			timed(func() { _, err = s.Expire(key, ttl) })
		case 8:
			timed(func() { _, err = s.Del(key) })
		case 9:
			v := crashValue(rand.Uint64(), randomSize())
			timed(func() { _, err = s.SetNX(key, v, 200*time.Millisecond) })
		case 10:
			// A session request: lock, read, write under the lock, read
			// again (held data is never evicted), release.
			sid := strconv.Itoa(rand.IntN(32))
			lock, data := sessionkeys.LockKey(sid), sessionkeys.DataKey(sid)
			var out contract.SetNXOutcome
			since := expiryNow()
			timed(func() { out, err = s.SetNX(lock, token, time.Second) })
			if err != nil || out != contract.Inserted {
				break
			}
			var n int
			var found, ok bool
			timed(func() { n, found, err = s.GetInto(data, dst) })
			if err == nil && found && n <= len(dst) && !crashValueOK(dst[:n]) {
				bad("get %s: a value of %d bytes that no write wrote", data, n)
			}
			v := crashValue(rand.Uint64(), randomSize())
			if err == nil {
				timed(func() { ok, err = backend.SetGuarded(s, data, v, time.Minute, lock, token) })
				if err == nil && !ok && mine(since) {
					bad("set_guarded under my own session lock %s refused", lock)
				}
			}
			if err == nil && ok {
				timed(func() { n, found, err = s.GetInto(data, dst) })
				if err == nil && (!found || n != len(v)) && mine(since) {
					bad("held session %s lost its data (found %v, %d bytes of %d)", data, found, n, len(v))
				}
			}
			var released bool
			var rerr error
			timed(func() { released, rerr = s.DelIfEq(lock, token) })
			if rerr == nil && !released && mine(since) {
				bad("del_if_eq of my own session lock %s refused", lock)
			}
			if err == nil {
				err = rerr
			}
		case 11:
			lock := fmt.Sprintf("rw:%d", rand.IntN(crashRWLocks))
			mode := contract.LockMode(rand.IntN(2))
			claim := time.Duration(0)
			if mode == contract.LockExclusive {
				claim = contract.WriterClaim
			}
			tok := []byte(fmt.Sprintf("%s:%d", token, rand.Uint64()))
			var out contract.SetNXOutcome
			since := expiryNow()
			timed(func() { out, _, err = s.LockAttempt(lock, tok, mode, time.Second, claim) })
			if err != nil || out != contract.Inserted {
				break
			}
			var m contract.LockMode
			var n int
			timed(func() { m, n, err = s.LockInfo(lock) })
			if err == nil && (m != mode || n < 1 || mode == contract.LockExclusive && n != 1) && mine(since) {
				bad("lock_info of %s held in mode %d: %d %d", lock, mode, m, n)
			}
			var ok bool
			if err == nil && rand.IntN(2) == 0 {
				renewed := expiryNow()
				timed(func() { ok, err = s.LockRefresh(lock, tok, time.Second) })
				if err == nil && !ok && mine(since) {
					bad("lock_refresh of my own hold of %s refused", lock)
				}
				if ok {
					since = renewed
				}
			}
			if err == nil {
				timed(func() { ok, err = s.LockRelease(lock, tok) })
				if err == nil && !ok && mine(since) {
					bad("lock_release of my own hold of %s refused", lock)
				}
			}
		}
		if err != nil && !strings.Contains(err.Error(), contract.ErrNoMemory.Error()) {
			bad("%v", err)
		}
		if took > slowest {
			slowest = took
			fmt.Printf("max %d %s\n", took, crashOps[op])
		}
		if d := s.DeadOwnerWait(); d > dead {
			dead = d
			fmt.Printf("dead %d\n", d)
		}
	}
}

var crashOps = [...]string{"set", "set", "get", "get", "incr", "lock+set_guarded+expire_if_eq+del_if_eq",
	"del_if_eq", "expire", "del", "set_nx", "session lock+get+set_guarded+get+del_if_eq",
	"lock_acquire+lock_info+lock_refresh+lock_release"}

// crashRWLocks is how many read/write lock names the crash workers share.
const crashRWLocks = 4

// noiseWorker measures the machine's scheduling noise while the crash test
// runs: how late a 1 ms sleep wakes, printed as "max NS" whenever the
// latest so far grows.
func noiseWorker() {
	fmt.Println("ready")
	var latest time.Duration
	for {
		start := time.Now()
		time.Sleep(time.Millisecond)
		if d := time.Since(start) - time.Millisecond; d > latest {
			latest = d
			fmt.Printf("max %d\n", d)
		}
	}
}

// crashSlot is one of the test's worker processes and what it reported.
type crashSlot struct {
	w     *worker
	ready chan struct{}
	done  chan struct{} // closed when its output ends
}

// TestCrashRecovery runs crashWorkers processes on one segment and
// SIGKILLs one of them at a random moment every few ms, *shm.kills times,
// restarting it each time. It checks the segment's integrity after each
// phase, that no acknowledged increment is lost, that no worker saw a value
// no write wrote or an error other than NOMEM, and that no wait for a dead
// owner's shard and no store call hung (hangLimit). It logs the longest
// dead-owner wait and store call beside the scheduling noise a process
// doing nothing saw meanwhile (a 1 ms sleep's lateness, measured by its own
// process): those times are the host's scheduler's as much as the store's,
// so they are not asserted. On failure it prints each worker's last lines,
// the kills so far and keeps a copy of the segment.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	s := openWith(t, crashOptions)
	name := testName(t)
	var mu sync.Mutex
	acked := map[string]int64{} // counter key -> highest value acknowledged
	var slowest, deadWait, noise time.Duration
	var slowestOp string
	var bads []string
	tails := make([][]string, crashWorkers) // each worker's last lines
	killsOf := map[int]int{}
	kills, phase := 0, 0
	began := time.Now()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		t.Logf("failed in phase %d after %d kills, %v: slowest call %v (%s), longest dead-owner wait %v, noise %v",
			phase, kills, time.Since(began).Round(time.Millisecond), slowest, slowestOp, deadWait, noise)
		for i, tail := range tails {
			t.Logf("worker %d (%d kills), last lines:\n\t%s", i, killsOf[i], strings.Join(tail, "\n\t"))
		}
		keep := fmt.Sprintf("%s/ephpm-crash-%d.seg", os.TempDir(), os.Getpid())
		if b, err := os.ReadFile(s.Path()); err == nil && os.WriteFile(keep, b, 0o600) == nil {
			t.Logf("the segment as the test left it: %s", keep)
		}
	})

	noiseProbe := startWorker(t, "noise", nil)
	noiseProbe.expect(t, "ready")
	noiseDone := make(chan struct{})
	go func() {
		defer close(noiseDone)
		for l := range noiseProbe.lines {
			var d int64
			fmt.Sscanf(l, "max %d", &d)
			mu.Lock()
			noise = max(noise, time.Duration(d))
			mu.Unlock()
		}
	}()

	start := func(i int) *crashSlot {
		c := &crashSlot{ready: make(chan struct{}), done: make(chan struct{})}
		c.w = startWorker(t, "crash", []string{"SHM_NAME=" + name, fmt.Sprintf("SHM_ID=%d", i)})
		go func() {
			defer close(c.done)
			for l := range c.w.lines {
				f := strings.Fields(l)
				mu.Lock()
				tails[i] = append(tails[i], l)
				if len(tails[i]) > crashTail {
					tails[i] = tails[i][1:]
				}
				switch f[0] {
				case "ready":
					close(c.ready)
				case "ack":
					v, _ := strconv.ParseInt(f[2], 10, 64)
					k := fmt.Sprintf("ctr:%d:%s", i, f[1])
					acked[k] = max(acked[k], v)
				case "max":
					d, _ := strconv.ParseInt(f[1], 10, 64)
					if time.Duration(d) > slowest {
						slowest, slowestOp = time.Duration(d), f[2]
					}
				case "dead":
					d, _ := strconv.ParseInt(f[1], 10, 64)
					deadWait = max(deadWait, time.Duration(d))
				default:
					bads = append(bads, fmt.Sprintf("worker %d: %s", i, l))
				}
				mu.Unlock()
			}
		}()
		return c
	}
	// waitReady fails the test if the worker ends before it is ready.
	waitReady := func(i int, c *crashSlot) {
		select {
		case <-c.ready:
		case <-c.done:
			err := c.w.cmd.Wait()
			t.Fatalf("worker %d ended before it was ready: %v", i, err)
		}
	}
	// stop kills a worker; one that had already ended (a panic, an exit)
	// is a failure.
	stop := func(i int, c *crashSlot) {
		c.w.cmd.Process.Signal(syscall.SIGKILL)
		err := c.w.cmd.Wait()
		<-c.done
		if ws, ok := c.w.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			mu.Lock()
			bads = append(bads, fmt.Sprintf("worker %d ended by itself before kill %d: %v", i, kills, err))
			mu.Unlock()
		}
	}
	slots := make([]*crashSlot, crashWorkers)
	for i := range slots {
		slots[i] = start(i)
	}
	for phase = 0; phase < crashPhases; phase++ {
		for k := 0; k < *crashKills/crashPhases; k++ {
			i := kills % crashWorkers
			waitReady(i, slots[i])
			// A random moment of its run: 0-4 ms after it was ready, or
			// (for a worker that has been running) from now.
			time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
			stop(i, slots[i])
			killsOf[i]++
			kills++
			slots[i] = start(i)
		}
		require.NoError(t, s.Check(), "integrity after phase %d", phase)
	}
	for i, c := range slots {
		waitReady(i, c)
		stop(i, c)
	}
	elapsed := time.Since(began)
	noiseProbe.cmd.Process.Signal(syscall.SIGKILL)
	noiseProbe.cmd.Wait()
	<-noiseDone
	require.NoError(t, s.Check(), "integrity at the end")
	// Each read/write lock name holds a whole reader record, a token, or
	// nothing.
	for i := 0; i < crashRWLocks; i++ {
		dst := make([]byte, 64<<10)
		n, found, err := s.GetInto(fmt.Sprint("rw:", i), dst)
		require.NoError(t, err)
		if v := dst[:n]; found && contract.IsReaderRecord(v) {
			_, err := contract.ParseReaderRecord(v)
			assert.NoError(t, err, "rw:%d", i)
		} else if found {
			assert.Len(t, strings.Split(string(v), ":"), 3, "rw:%d holds a token: %q", i, v)
		}
		mode, holders, err := s.LockInfo(fmt.Sprint("rw:", i))
		require.NoError(t, err)
		t.Logf("rw:%d left held by the killed workers: mode %d, %d holders", i, mode, holders)
	}

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, bads)
	for k, v := range acked {
		got, found := readInt(t, s, k)
		require.True(t, found, "%s lost", k)
		var i int
		fmt.Sscanf(k, "ctr:%d:", &i)
		// Each kill can leave at most one increment unacknowledged.
		assert.GreaterOrEqual(t, got, v, "%s: an acknowledged increment was lost", k)
		assert.LessOrEqual(t, got, v+int64(killsOf[i]), "%s: more increments than were made", k)
	}
	assert.NotEmpty(t, acked)
	var increments int64
	for _, v := range acked {
		increments += v
	}
	t.Logf("%d kills in %v, %d recoveries, %d increments acknowledged; longest wait for a dead owner's shard %v; "+
		"slowest store call %v (%s); scheduling noise (a 1 ms sleep's lateness) up to %v; %d processes attached after",
		kills, elapsed.Round(time.Millisecond), s.Recoveries(), increments, deadWait, slowest, slowestOp, noise, s.Attached())
	st, err := s.Stats()
	require.NoError(t, err)
	t.Logf("session data: %d bytes of a %d-byte budget; %d evictions", st.SessionBytes, st.SessionLimit, st.Evictions)
	assert.NotZero(t, st.SessionBytes, "session writes ran")
	assert.Less(t, deadWait, hangLimit, "a wait for a dead owner's shard hung")
	assert.Less(t, slowest, hangLimit, "a store call hung")
	assert.Equal(t, 1, s.Attached(), "the killed workers' slots count as dead")
}

func readInt(t *testing.T, s *Store, key string) (int64, bool) {
	dst := make([]byte, 32)
	n, found, err := s.GetInto(key, dst)
	require.NoError(t, err)
	if !found {
		return 0, false
	}
	v, err := strconv.ParseInt(string(dst[:n]), 10, 64)
	require.NoError(t, err)
	return v, true
}
