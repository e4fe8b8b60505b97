package shm

import (
	"bufio"
	"fmt"
	"io"
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

	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/lockwait"
	"github.com/ephpm/ephpm/sessionkeys"
)

// lockAttempts makes LockAttempt in mode lockwait.Locker's fenced attempt,
// so that the tests wait between attempts with the session handler's own
// loop (backoff, Wait): an exclusive attempt leaves a claim of
// contract.WriterClaim.
type lockAttempts struct {
	s    *Store
	mode contract.LockMode
}

// Step is the fenced acquire's Step (backend.SetNXFenced) as LockAttempt.
func (a lockAttempts) Step(st *contract.Step) error {
	claim := time.Duration(0)
	if a.mode == contract.LockExclusive {
		claim = contract.WriterClaim
	}
	out, fence, err := a.s.LockAttempt(st.Lock, st.Token, a.mode, st.LockTTL, claim)
	st.Outcome, st.Fence, st.Held = out, fence, out == contract.Inserted
	return err
}

// acquireLock takes key in mode with a fresh token, waiting at most budget.
func acquireLock(s *Store, key string, mode contract.LockMode, ttl, budget time.Duration) (token []byte, fence int64, err error) {
	tok, err := sessionkeys.NewToken()
	if err != nil {
		return nil, 0, err
	}
	res, fence, err := (&lockwait.Locker{Store: s}).AcquireFenced(lockAttempts{s, mode}, key, []byte(tok), ttl, budget)
	if err != nil || !res.Acquired {
		return nil, 0, err
	}
	return []byte(tok), fence, nil
}

func init() {
	// rw runs the lock calls its standard input names on the name "rw":
	//	try MODE TOKEN TTL_MS CLAIM_MS  -> granted FENCE | refused
	//	wait MS                         -> woke FREE NS
	//	release TOKEN                   -> released BOOL
	workers["rw"] = func() {
		s := workerStore()
		if s == nil {
			return
		}
		defer s.Close()
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			f := strings.Fields(in.Text())
			ms := func(i int) time.Duration {
				n, _ := strconv.Atoi(f[i])
				return time.Duration(n) * time.Millisecond
			}
			switch f[0] {
			case "try":
				mode, _ := strconv.Atoi(f[1])
				out, fence, err := s.LockAttempt("rw", []byte(f[2]), contract.LockMode(mode), ms(3), ms(4))
				switch {
				case err != nil:
					fmt.Println("error", err)
				case out == contract.Inserted:
					fmt.Println("granted", fence)
				default:
					fmt.Println("refused")
				}
			case "wait":
				start := time.Now()
				free, err := s.Wait("rw", ms(1))
				if err != nil {
					fmt.Println("error", err)
					continue
				}
				fmt.Println("woke", free, int64(time.Since(start)))
			case "release":
				ok, err := s.LockRelease("rw", []byte(f[1]))
				fmt.Println("released", ok, err)
			}
		}
	}
}

// rwWorker is a running "rw" worker.
type rwWorker struct{ *worker }

func startRW(t *testing.T) rwWorker {
	t.Helper()
	w := startWorkerIn(t, "rw", []string{"SHM_NAME=" + testName(t)})
	t.Cleanup(func() {
		w.stdin.Close()
		w.cmd.Process.Signal(syscall.SIGKILL)
		w.cmd.Wait()
	})
	return rwWorker{w}
}

func (w rwWorker) send(format string, args ...any) { fmt.Fprintf(w.stdin, format+"\n", args...) }

// woke reads a wait's answer: whether the key was free and how long the
// wait took.
func (w rwWorker) woke(t *testing.T) (bool, time.Duration) {
	t.Helper()
	f := strings.Fields(w.expect(t, "woke "))
	ns, _ := strconv.ParseInt(f[2], 10, 64)
	return f[1] == "true", time.Duration(ns)
}

// A writer waiting for readers (Wait for 600 s, the key held all along by
// its own claim of 1200 s) is woken by the last reader's release, and only
// by that one: the release marks its wait slot woken in its own step, and
// the wait returns true with the key still holding the claim. A re-check
// finds the key held, and a wait that runs out unwoken returns false, so
// true is the wake. The latency from the release to the answer is logged
// (timing is the benchmarks' and measurements.md's, not asserted).
func TestTheLastReaderWakesAWaitingWriter(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	sh, _, _ := s.locate("rw")
	w := startRW(t)
	var latencies []time.Duration
	for round := 0; round < 3; round++ {
		r1, r2 := fmt.Sprint("r1-", round), fmt.Sprint("r2-", round)
		for _, r := range []string{r1, r2} {
			ok, _ := attempt(t, s, "rw", r, contract.LockShared, time.Hour, 0)
			require.True(t, ok)
		}
		w.send("try 0 writer 600000 1200000")
		w.expect(t, "refused")
		w.send("wait 600000")
		require.Eventually(t, func() bool { return s.waitingOn(sh) == 1 }, hangLimit, time.Millisecond)

		require.True(t, release(t, s, "rw", r1))
		assert.Equal(t, 1, s.waitingOn(sh), "a reader still holds it: nobody is woken")
		released := time.Now()
		require.True(t, release(t, s, "rw", r2))
		assert.Zero(t, s.waitingOn(sh), "the last reader's release woke the writer")
		woken, _ := w.woke(t)
		latency := time.Since(released)
		latencies = append(latencies, latency)
		held, err := s.Exists("rw")
		require.NoError(t, err)
		assert.True(t, held, "the writer's claim still holds the key")
		// The claim keeps the key live past the wait's 600 s, so a re-check
		// never ends it: only a wake returns true.
		assert.True(t, woken, "round %d: woken, not timed out", round)

		w.send("try 0 writer 600000 1200000")
		w.expect(t, "granted ")
		ok, _ := attempt(t, s, "rw", "late-reader", contract.LockShared, time.Minute, 0)
		assert.False(t, ok, "the writer holds it")
		w.send("release writer")
		w.expect(t, "released true")
	}
	t.Logf("wake latency, release to the waiter's answer read here: %v", latencies)
}

// A run of readers waiting behind a writer enter in turn: the writer's
// release wakes the oldest, whose grant wakes the next.
func TestASharedGrantWakesTheNextReader(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	sh, _, _ := s.locate("rw")
	ok, _ := attempt(t, s, "rw", "writer", contract.LockExclusive, time.Hour, 0)
	require.True(t, ok)
	readers := []rwWorker{startRW(t), startRW(t)}
	for i, r := range readers {
		r.send("try 1 reader%d 3600000 0", i)
		r.expect(t, "refused")
		r.send("wait 600000")
		require.Eventually(t, func() bool { return s.waitingOn(sh) == i+1 }, hangLimit, time.Millisecond)
	}
	require.True(t, release(t, s, "rw", "writer"))
	assert.Equal(t, 1, s.waitingOn(sh), "the release wakes one waiter, the oldest")
	free, _ := readers[0].woke(t)
	assert.True(t, free)
	readers[0].send("try 1 reader0 3600000 0")
	readers[0].expect(t, "granted ")
	// reader0 holds the name: a re-check finds it held, and a wait that
	// runs out unwoken (600 s) returns false. True is the grant's wake.
	free, _ = readers[1].woke(t)
	assert.True(t, free, "woken by the first reader's grant")
	assert.Zero(t, s.waitingOn(sh))
	readers[1].send("try 1 reader1 3600000 0")
	readers[1].expect(t, "granted ")
	mode, n := info(t, s, "rw")
	assert.Equal(t, contract.LockShared, mode)
	assert.Equal(t, 2, n)
}

// A reader whose process died leaves its hold until the hold's TTL, and
// not longer: the hold's deadline is its TTL, and a writer waiting for it
// gets in once it lapses, not before. A writer that died waiting leaves
// its claim until the claim lapses. Both are timed on the clock the store
// keeps deadlines on (expiryNow); how soon after the lapse the waiter runs
// is the host's, so only its wait's budget (a hang catch) bounds that. That
// the hold stands is asserted while it cannot have lapsed: a host slower
// than the TTL between the grant and the look is not asserted on.
func TestADeadProcessHoldsOnlyUntilItsDeadline(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	const ttl = 2 * time.Second
	pttl := func() time.Duration {
		t.Helper()
		d, found, err := s.PTTL("rw")
		require.NoError(t, err)
		require.True(t, found)
		return d
	}
	w := startRW(t)
	began := expiryNow()
	w.send("try 1 dead-reader %d 0", ttl.Milliseconds())
	w.expect(t, "granted ")
	granted := time.Now()
	assert.LessOrEqual(t, pttl(), ttl, "the dead reader's hold ends at its TTL")
	w.cmd.Process.Signal(syscall.SIGKILL)
	w.cmd.Wait()
	mode, n := info(t, s, "rw")
	if expiryNow()-began < int64(ttl) { // read after info: the hold had not lapsed at info
		require.Equal(t, contract.LockShared, mode)
		require.Equal(t, 1, n, "the dead reader's hold stands until its TTL")
	}
	token, _, err := acquireLock(s, "rw", contract.LockExclusive, time.Minute, hangLimit)
	require.NoError(t, err)
	require.NotNil(t, token, "the writer gets in")
	t.Logf("writer in %v after the dead reader's grant (TTL %v)", time.Since(granted), ttl)
	assert.GreaterOrEqual(t, expiryNow()-began, int64(ttl), "not before the hold lapsed")
	require.True(t, release(t, s, "rw", string(token)))

	// A writer that dies waiting leaves its claim: readers are refused
	// until it lapses, and not longer.
	ok, _ := attempt(t, s, "rw", "reader", contract.LockShared, time.Minute, 0)
	require.True(t, ok)
	w = startRW(t)
	claimed := expiryNow()
	w.send("try 0 dead-writer 60000 %d", ttl.Milliseconds())
	w.expect(t, "refused")
	w.cmd.Process.Signal(syscall.SIGKILL)
	w.cmd.Wait()
	ok, _ = attempt(t, s, "rw", "reader2", contract.LockShared, time.Minute, 0)
	if expiryNow()-claimed < int64(ttl) { // read after the attempt: the claim had not lapsed at it
		require.False(t, ok, "the dead writer's claim stands until it lapses")
	} else if ok {
		require.True(t, release(t, s, "rw", "reader2"))
	}
	token, _, err = acquireLock(s, "rw", contract.LockShared, time.Minute, hangLimit)
	require.NoError(t, err)
	require.NotNil(t, token, "a reader gets in")
	assert.GreaterOrEqual(t, expiryNow()-claimed, int64(ttl), "not before the claim lapsed")
	_, n = info(t, s, "rw")
	assert.Equal(t, 2, n)
}

func init() { workers["rwload"] = rwLoadWorker }

// rwLoadWorker takes the name "rw" RW_ROUNDS times in mode RW_MODE once
// fd 3 (the barrier) reaches its end, and checks under each hold that
// nobody holds it against its mode: each holder counts itself in the
// segment (readers, writers) and looks at the other count and at
// LockInfo. It prints "fence F" per grant, "bad ..." for a breach, and
// "done MAXREADERS" (the most readers it saw inside with it).
func rwLoadWorker() {
	s := workerStore()
	if s == nil {
		return
	}
	defer s.Close()
	mode := contract.LockShared
	if os.Getenv("RW_MODE") == "exclusive" {
		mode = contract.LockExclusive
	}
	rounds, _ := strconv.Atoi(os.Getenv("RW_ROUNDS"))
	barrier := os.NewFile(3, "barrier")
	fmt.Println("ready")
	io.Copy(io.Discard, barrier)
	bad := func(format string, args ...any) { fmt.Printf("bad "+format+"\n", args...) }
	count := func(key string, d int64) int64 {
		v, err := s.IncrBy(key, d, 0)
		if err != nil {
			bad("incr %s: %v", key, err)
		}
		return v
	}
	var lastFence, maxReaders int64
	for i := 0; i < rounds; i++ {
		// The hold's TTL and the wait are hang catches, not speed bounds.
		token, fence, err := acquireLock(s, "rw", mode, hangLimit, hangLimit)
		if err != nil || token == nil {
			bad("round %d: not granted in %v: %v", i, hangLimit, err)
			return
		}
		if fence <= lastFence {
			bad("fence %d after my %d", fence, lastFence)
		}
		lastFence = fence
		fmt.Println("fence", fence)
		m, n, err := s.LockInfo("rw")
		if mode == contract.LockExclusive {
			if c := count("writers", 1); c != 1 {
				bad("%d writers inside", c)
			}
			if r := count("readers", 0); r != 0 {
				bad("a writer inside with %d readers", r)
			}
			if err != nil || m != contract.LockExclusive || n != 1 {
				bad("a writer inside sees lock_info %d %d %v", m, n, err)
			}
			time.Sleep(100 * time.Microsecond) // the hold's work
			count("writers", -1)
		} else {
			maxReaders = max(maxReaders, count("readers", 1))
			if w := count("writers", 0); w != 0 {
				bad("a reader inside with %d writers", w)
			}
			if err != nil || m != contract.LockShared || n < 1 {
				bad("a reader inside sees lock_info %d %d %v", m, n, err)
			}
			time.Sleep(500 * time.Microsecond) // the hold's work
			count("readers", -1)
		}
		if ok, err := s.LockRelease("rw", token); err != nil || !ok {
			bad("release of my hold: %v %v", ok, err)
		}
	}
	fmt.Println("done", maxReaders)
}

// Reader and writer processes released together at a barrier never hold
// one name against each other's mode, writers are not starved by the
// readers (each grant comes within its wait, a hang catch), readers do
// share, and every grant's fence differs from every other's (each
// process's increase).
func TestReadersAndWritersNeverOverlapAcrossProcesses(t *testing.T) {
	const readers, writers, rounds = 4, 2, 60
	s := openTest(t, contract.MemoryConfig{Limit: 4 << 20})
	r, wr, err := os.Pipe()
	require.NoError(t, err)
	var ws []*worker
	for i := 0; i < readers+writers; i++ {
		mode := "shared"
		if i >= readers {
			mode = "exclusive"
		}
		ws = append(ws, startWorker(t, "rwload", []string{"SHM_NAME=" + testName(t), "RW_MODE=" + mode,
			fmt.Sprint("RW_ROUNDS=", rounds)}, r))
	}
	r.Close()
	for _, w := range ws {
		w.expect(t, "ready")
	}
	wr.Close() // the barrier's release
	var mu sync.Mutex
	var bads []string
	fences := map[string]int{}
	var maxReaders int64
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range w.lines {
				mu.Lock()
				switch f := strings.Fields(l); f[0] {
				case "fence":
					fences[f[1]]++
				case "done":
					n, _ := strconv.ParseInt(f[1], 10, 64)
					maxReaders = max(maxReaders, n)
				default:
					bads = append(bads, l)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, w := range ws {
		require.NoError(t, w.cmd.Wait())
	}
	assert.Empty(t, bads)
	assert.Len(t, fences, (readers+writers)*rounds, "one fence per grant, none repeated")
	assert.Greater(t, maxReaders, int64(1), "readers shared the name")
	_, n := info(t, s, "rw")
	assert.Zero(t, n, "every hold released")
}

func init() { workers["rwcrash"] = rwCrashWorker }

// rwCrashWorker takes the names RW_LOCKS lists in random modes until it is
// killed, with holds of rwCrashTTL, and checks each hold while it cannot
// have lapsed: a writer finds its token in the name and LockInfo says
// exclusive, a reader finds its hold in the reader record. It prints
// "grant" per grant and "bad ..." for a breach.
func rwCrashWorker() {
	s := workerStore()
	if s == nil {
		return
	}
	locks := strings.Split(os.Getenv("RW_LOCKS"), ",")
	fmt.Println("ready")
	dst := make([]byte, 64<<10)
	for {
		lock := locks[rand.IntN(len(locks))]
		mode := contract.LockMode(rand.IntN(2))
		asked := expiryNow() // the grant, and so its hold's TTL, came after this
		token, _, err := acquireLock(s, lock, mode, rwCrashTTL, hangLimit)
		if err != nil || token == nil {
			fmt.Printf("bad %s in mode %d not granted in %v: %v\n", lock, mode, hangLimit, err)
			continue
		}
		fmt.Println("grant")
		m, holders, err := s.LockInfo(lock)
		n, found, gerr := s.GetInto(lock, dst)
		v := dst[:min(n, len(dst))]
		held := false
		if found && mode == contract.LockExclusive {
			held = string(v) == string(token)
		} else if r, perr := contract.ParseReaderRecord(v); found && perr == nil {
			for _, h := range r.Holds {
				held = held || string(h.Token) == string(token)
			}
		}
		if expiryNow()-asked < int64(rwCrashTTL) {
			if err != nil || gerr != nil || m != mode || holders < 1 || !held {
				fmt.Printf("bad %s held in mode %d: lock_info %d %d %v, my hold found %v (%v)\n", lock, mode, m, holders, err, held, gerr)
			}
		}
		ok, err := s.LockRelease(lock, token)
		if err != nil || !ok && expiryNow()-asked < int64(rwCrashTTL) {
			fmt.Printf("bad release of my hold of %s: %v %v\n", lock, ok, err)
		}
	}
}

const rwCrashTTL = 500 * time.Millisecond

// Processes taking read/write locks are SIGKILLed at random moments, in
// lock steps among others: the shards stay whole, every hold checks out,
// every wait ends in a grant within its budget (a dead holder's hold lapses
// by its TTL), and the names are free to take at once when the TTL has
// passed on the store's clock.
func TestReadWriteLocksSurviveKilledProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	locks := []string{"rw:a", "rw:b"}
	var mu sync.Mutex
	var bads []string
	grants := 0
	start := func() (*worker, chan struct{}) {
		return startReporting(t, "rwcrash", []string{"SHM_NAME=" + testName(t), "RW_LOCKS=" + strings.Join(locks, ",")},
			func(l string) {
				mu.Lock()
				if l == "grant" {
					grants++
				} else {
					bads = append(bads, l)
				}
				mu.Unlock()
			})
	}
	const procs, kills = 4, 300
	killAtRandom(procs, kills, 5*time.Millisecond, start, func(k int) {
		if k%100 == 0 {
			require.NoError(t, s.Check(), "integrity after %d kills", k)
		}
	})
	require.NoError(t, s.Check())
	// Every hold and claim was made before the last kill: once the longer
	// of their lengths has passed on the store's clock, each name is free
	// to take at the first attempt.
	sleepOnStoreClock(max(rwCrashTTL, contract.WriterClaim))
	for _, lock := range locks {
		token, _, err := acquireLock(s, lock, contract.LockExclusive, time.Minute, 0)
		require.NoError(t, err)
		require.NotNil(t, token, "%s is free once the dead holders' TTL passed", lock)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, bads)
	assert.Positive(t, grants)
	t.Logf("%d kills, %d grants, %d recoveries", kills, grants, s.Recoveries())
}

func init() {
	// rwstream takes "rw" for reading again and again, holding it 2 ms
	// each time, and counts its grants in the segment ("reads") until its
	// standard input ends.
	workers["rwstream"] = func() {
		s := workerStore()
		if s == nil {
			return
		}
		var stop sync.WaitGroup
		stop.Add(1)
		go func() { io.Copy(io.Discard, os.Stdin); stop.Done() }()
		done := make(chan struct{})
		go func() { stop.Wait(); close(done) }()
		fmt.Println("ready")
		for {
			select {
			case <-done:
				fmt.Println("done")
				return
			default:
			}
			token, _, err := acquireLock(s, "rw", contract.LockShared, hangLimit, hangLimit)
			if err != nil || token == nil {
				fmt.Println("bad reader not granted in", hangLimit, err)
				continue
			}
			s.IncrBy("reads", 1, 0)
			time.Sleep(2 * time.Millisecond) // the hold's work
			if ok, err := s.LockRelease("rw", token); !ok || err != nil {
				fmt.Println("bad release:", ok, err)
			}
		}
	}
}

// A stream of reader processes whose holds overlap all the time does not
// starve a writer: each of its acquisitions gets in (the claim refuses new
// readers and the ones inside leave), while the readers go on reading
// between them.
func TestAStreamOfReadersDoesNotStarveAWriter(t *testing.T) {
	const readers, writes = 4, 20
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	var ws []*worker
	for i := 0; i < readers; i++ {
		w := startWorkerIn(t, "rwstream", []string{"SHM_NAME=" + testName(t)})
		w.expect(t, "ready")
		ws = append(ws, w)
	}
	reads := func() int64 {
		n, _ := readInt(t, s, "reads")
		return n
	}
	require.Eventually(t, func() bool { _, n := info(t, s, "rw"); return n >= 2 }, hangLimit, time.Millisecond,
		"the readers' holds overlap")
	var waited []time.Duration
	for i := 0; i < writes; i++ {
		before := reads()
		start := time.Now()
		// The readers read on until their input ends: a starved writer would
		// wait out its budget (a hang catch, not a speed bound).
		token, _, err := acquireLock(s, "rw", contract.LockExclusive, time.Minute, hangLimit)
		require.NoError(t, err)
		require.NotNil(t, token, "write %d: the writer got in within %v", i, hangLimit)
		waited = append(waited, time.Since(start))
		mode, n := info(t, s, "rw")
		require.Equal(t, contract.LockExclusive, mode)
		require.Equal(t, 1, n)
		require.True(t, release(t, s, "rw", string(token)))
		require.Eventually(t, func() bool { return reads() > before+int64(readers) }, hangLimit, time.Millisecond,
			"write %d: the readers go on between writes", i)
	}
	for _, w := range ws {
		w.stdin.Close()
	}
	for _, w := range ws {
		for l := range w.lines {
			assert.Equal(t, "done", l)
		}
		require.NoError(t, w.cmd.Wait())
	}
	t.Logf("%d reads; the writer's waits: %v", reads(), waited)
}
