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

	"github.com/ephpm/ephpm/kv"
)

var crashKills = flag.Int("shm.kills", 1000, "SIGKILLs the crash test deals its workers")

const (
	crashWorkers  = 4
	crashCounters = 4 // counters per worker
	crashKeys     = 64
	crashPhases   = 10
	crashMaxOp    = 500 * time.Millisecond
)

func init() { workers["crash"] = crashWorker }

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
// acknowledged with V, "max NS" whenever its slowest operation so far grows,
// and "bad ..." for anything the contract forbids.
func crashWorker() {
	id := os.Getenv("SHM_ID")
	s, err := Open(os.Getenv("SHM_NAME"), Options{PinnedPrefixes: []string{"ctr:"}})
	if err != nil {
		fmt.Println("bad open:", err)
		return
	}
	fmt.Println("ready")
	var slowest time.Duration
	dst := make([]byte, 64<<10)
	token := []byte(id + ":" + strconv.Itoa(os.Getpid()))
	bad := func(format string, args ...any) { fmt.Printf("bad "+format+"\n", args...) }
	for {
		key := fmt.Sprintf("k:%d", rand.IntN(crashKeys))
		start := time.Now()
		var err error
		switch op := rand.IntN(10); op {
		case 0, 1:
			ttl := time.Duration(0)
			if rand.IntN(3) == 0 {
				ttl = time.Duration(1+rand.IntN(300)) * time.Millisecond
			}
			err = s.Set(key, crashValue(rand.Uint64(), randomSize()), ttl)
		case 2, 3:
			var n int
			var found bool
			n, found, err = s.GetInto(key, dst)
			if err == nil && found && n <= len(dst) && !crashValueOK(dst[:n]) {
				bad("get %s: a value of %d bytes that no write wrote", key, n)
			}
		case 4:
			c := rand.IntN(crashCounters)
			var v int64
			v, err = s.IncrBy(fmt.Sprintf("ctr:%s:%d", id, c), 1, 0)
			if err == nil {
				fmt.Printf("ack %d %d\n", c, v)
			}
		case 5:
			lock := fmt.Sprintf("lock:%d", rand.IntN(8))
			var out kv.SetNXOutcome
			out, err = s.SetNX(lock, token, time.Second)
			if err == nil && out == kv.Inserted {
				var ok bool
				ok, err = s.SetGuarded("data:"+lock, crashValue(rand.Uint64(), randomSize()), time.Minute, lock, token)
				if err == nil && !ok {
					bad("set_guarded under my own lock %s refused", lock)
				}
				if err == nil {
					ok, err = s.ExpireIfEq(lock, token, time.Second)
					if err == nil && !ok {
						bad("expire_if_eq of my own lock %s refused", lock)
					}
				}
				if err == nil {
					ok, err = s.DelIfEq(lock, token)
					if err == nil && !ok {
						bad("del_if_eq of my own lock %s refused", lock)
					}
				}
			}
		case 6:
			_, err = s.DelIfEq(key, []byte("no such value"))
		case 7:
			_, err = s.Expire(key, time.Duration(rand.IntN(500))*time.Millisecond)
		case 8:
			_, err = s.Del(key)
		case 9:
			_, err = s.SetNX(key, crashValue(rand.Uint64(), randomSize()), 200*time.Millisecond)
		}
		if err != nil && !strings.Contains(err.Error(), kv.ErrNoMemory.Error()) {
			bad("%v", err)
		}
		if d := time.Since(start); d > slowest {
			slowest = d
			fmt.Printf("max %d\n", d)
		}
	}
}

// crashSlot is one of the test's worker processes and what it reported.
type crashSlot struct {
	w     *worker
	ready chan struct{}
	done  chan struct{}
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	s := openTest(t, kv.MemoryConfig{Limit: 16 << 20, Policy: kv.AllKeysLRU, Compression: true, CompressionMinSize: 64},
		"ctr:")
	name := testName(t)
	var mu sync.Mutex
	acked := map[string]int64{} // counter key -> highest value acknowledged
	var slowest time.Duration
	var bads []string
	killsOf := map[int]int{}

	start := func(i int) *crashSlot {
		c := &crashSlot{ready: make(chan struct{}), done: make(chan struct{})}
		c.w = startWorker(t, "crash", []string{"SHM_NAME=" + name, fmt.Sprintf("SHM_ID=%d", i)})
		go func() {
			defer close(c.done)
			for l := range c.w.lines {
				f := strings.Fields(l)
				mu.Lock()
				switch f[0] {
				case "ready":
					close(c.ready)
				case "ack":
					v, _ := strconv.ParseInt(f[2], 10, 64)
					k := fmt.Sprintf("ctr:%d:%s", i, f[1])
					acked[k] = max(acked[k], v)
				case "max":
					d, _ := strconv.ParseInt(f[1], 10, 64)
					slowest = max(slowest, time.Duration(d))
				default:
					bads = append(bads, fmt.Sprintf("worker %d: %s", i, l))
				}
				mu.Unlock()
			}
		}()
		return c
	}
	stop := func(c *crashSlot) {
		c.w.cmd.Process.Signal(syscall.SIGKILL)
		c.w.cmd.Wait()
		<-c.done
	}
	slots := make([]*crashSlot, crashWorkers)
	for i := range slots {
		slots[i] = start(i)
	}
	began := time.Now()
	kills := 0
	for phase := 0; phase < crashPhases; phase++ {
		for k := 0; k < *crashKills/crashPhases; k++ {
			i := kills % crashWorkers
			<-slots[i].ready
			// A random moment of its run: 0-4 ms after it was ready, or
			// (for a worker that has been running) from now.
			time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
			stop(slots[i])
			killsOf[i]++
			kills++
			slots[i] = start(i)
		}
		require.NoError(t, s.Check(), "integrity after phase %d", phase)
	}
	for _, c := range slots {
		<-c.ready
		stop(c)
	}
	elapsed := time.Since(began)
	require.NoError(t, s.Check(), "integrity at the end")

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
	t.Logf("%d kills in %v, %d recoveries, %d increments acknowledged, slowest operation %v, %d processes attached after",
		kills, elapsed.Round(time.Millisecond), s.Recoveries(), increments, slowest, s.Attached())
	assert.Less(t, slowest, crashMaxOp, "an operation outlasted the recovery bound")
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
