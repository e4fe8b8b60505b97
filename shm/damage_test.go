package shm

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/sessionkeys"
)

// Damaged segments: bytes no process wrote, over a segment's shards. A
// process that meets them gets the corrupt shard's error, never a fault
// (checked.go). A SIGSEGV on the mapping kills a Go process outright, so
// the process that meets the damage is a worker of its own, and the test
// asserts how it ended.

func init() {
	workers["damaged"] = damagedWorker
	workers["damageload"] = damageLoadWorker
}

var damageOptions = Options{Memory: contract.MemoryConfig{Limit: 4 << 20}}

// keyIn returns the first key "PREFIX<n>" that hashes to shard i of s.
func keyIn(s *Store, prefix string, i int) string {
	for n := 0; ; n++ {
		k := fmt.Sprint(prefix, n)
		if sh, _, _ := s.locate(k); sh.i == i {
			return k
		}
	}
}

// fillForDamage writes entries into every shard of s, some with a TTL,
// then deletes every third, the latest written first, so that the heaps
// hold live entries, free blocks on free lists (the earliest in the heap
// at their heads) and a spare, and the sweep cursors have moved.
func fillForDamage(t *testing.T, s *Store) {
	for i := 0; i < 3000; i++ {
		ttl := time.Duration(0)
		if i%2 == 0 {
			ttl = time.Hour
		}
		require.NoError(t, s.Set(fmt.Sprint("fill:", i), make([]byte, 40+i%200), ttl))
	}
	for i := 2999; i >= 0; i -= 3 {
		_, err := s.Del(fmt.Sprint("fill:", i))
		require.NoError(t, err)
	}
}

// damage writes n bytes from a fixed seed over the closed segment file
// path at off.
func damage(t *testing.T, path string, off int64, n int, seed uint64) {
	t.Helper()
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestADamagedShardAnswersItsErrorAndTheOthersServe writes random bytes
// over shard 0 of a closed segment, as the two reproductions did
// (512 bytes over its index slots at its sweep cursor; 64 KiB over the
// start of its heap), and runs calls on it in a worker: those on shard 0
// fail with its corrupt error, the lock of shard 0 is left free, a refused
// two-shard write changes nothing, the other shards serve, and the worker
// ends by itself (before the checks, each reproduction killed it with
// "fatal error: fault [signal SIGSEGV]").
func TestADamagedShardAnswersItsErrorAndTheOthersServe(t *testing.T) {
	for _, c := range []struct {
		name string
		at   func(s *Store) (off int64, n int)
	}{
		{"index slots at the sweep cursor", func(s *Store) (int64, int) {
			sh := &s.shards[0]
			cur := int64(atomic.LoadUint32(sh.u32(sSweep)))
			cur = min(cur, int64(s.g.indexSlots-64)) // within shard 0's index
			return sh.index + cur*8, 512
		}},
		{"the start of the heap", func(s *Store) (int64, int) {
			return s.shards[0].heap, 64 << 10
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := testName(t)
			removeSegment(name)
			t.Cleanup(func() { removeSegment(name) })
			s, err := Open(name, damageOptions)
			require.NoError(t, err)
			fillForDamage(t, s)
			require.Greater(t, len(s.shards), 1)
			old0 := "fill:1" // an entry early in its heap, if it is shard 0's
			if sh, _, _ := s.locate(old0); sh.i != 0 {
				old0 = keyIn(s, "fill:", 0)
			}
			new0, key1 := keyIn(s, "new:", 0), keyIn(s, "other:", 1)
			off, n := c.at(s)
			path := s.Path()
			require.NoError(t, s.Close())
			damage(t, path, off, n, 26)

			w := startWorker(t, "damaged", []string{"SHM_NAME=" + name,
				"SHM_KEYS=" + strings.Join([]string{new0, old0, key1}, ",")})
			var lines []string
			for l := range w.lines {
				lines = append(lines, l)
			}
			err = w.cmd.Wait()
			require.NoError(t, err, "the worker ended by itself, cleanly; it printed:\n%s", strings.Join(lines, "\n"))
			require.NotEmpty(t, lines)
			require.Equal(t, "done", lines[len(lines)-1], "it ran every call")
			corrupt := fmt.Sprintf("shard 0 of %s: stop the processes using it and remove the file", path)
			for _, l := range lines[:len(lines)-1] {
				switch {
				case strings.HasPrefix(l, "shard0 "):
					assert.Contains(t, l, ErrCorrupt.Error(), "a call on shard 0 answers its corrupt error")
					assert.Contains(t, l, corrupt, "naming the shard and the file")
				case strings.HasPrefix(l, "shard1 "), strings.HasPrefix(l, "lock0 "), strings.HasPrefix(l, "kept "):
					assert.True(t, strings.HasSuffix(l, ": ok"), "%s", l)
				default:
					t.Errorf("unexpected line %q", l)
				}
			}
		})
	}
}

// damagedWorker opens the damaged segment SHM_NAME and runs calls on the
// keys SHM_KEYS: a new key and an old one of shard 0, one of shard 1. It
// prints "shardI CALL: ok" or "shardI CALL: ERROR" for each call, then
// whether shard 0's lock is free and what the refused two-shard write
// left, then "done".
func damagedWorker() {
	keys := strings.Split(os.Getenv("SHM_KEYS"), ",")
	s, err := Open(os.Getenv("SHM_NAME"), damageOptions)
	if err != nil {
		fmt.Println("bad open:", err)
		return
	}
	report := func(shard int, call string, err error) {
		if err != nil {
			fmt.Printf("shard%d %s: %v\n", shard, call, err)
		} else {
			fmt.Printf("shard%d %s: ok\n", shard, call)
		}
	}
	dst := make([]byte, 1<<10)
	report(1, "set before", s.Set(keys[2], []byte("before"), 0))
	for _, k := range keys[:2] {
		report(0, "set "+k, s.Set(k, make([]byte, 100), 0))
		_, _, err := s.GetInto(k, dst)
		report(0, "get "+k, err)
		_, err = s.Del(k)
		report(0, "del "+k, err)
		_, err = s.SetNX(k, []byte("v"), time.Second)
		report(0, "set_nx "+k, err)
	}
	// A write to shard 1 guarded by a key of shard 0 (which would hold
	// "v" had the calls above been answered): refused, unchanged.
	_, err = backend.SetGuarded(s, keys[2], []byte("after"), 0, keys[1], []byte("v"))
	report(0, "set_guarded", err)
	n, found, err := s.GetInto(keys[2], dst)
	if err == nil && found && string(dst[:n]) == "before" {
		fmt.Println("kept by the refused write: ok")
	} else {
		fmt.Printf("kept by the refused write: %v %v %q\n", err, found, dst[:n])
	}
	report(1, "set", s.Set(keys[2], []byte("v1"), 0))
	n, found, err = s.GetInto(keys[2], dst)
	if err == nil && (!found || string(dst[:n]) != "v1") {
		err = fmt.Errorf("read back %v %q", found, dst[:n])
	}
	report(1, "get", err)
	_, err = s.Del(keys[2])
	report(1, "del", err)
	if w := atomic.LoadUint32(s.shards[0].u32(sLock)); w != 0 {
		fmt.Printf("lock0 left held: %#x\n", w)
	} else {
		fmt.Println("lock0 free: ok")
	}
	s.Close()
	fmt.Println("done")
}

var damageOps = flag.Int("shm.damage.ops", 3000, "calls each FuzzDamagedSegment input makes on its damaged segment")

// damageLoadOptions are the fuzzed segment's: small (two shards, so that
// eviction and defragmentation run), lz4 and eviction on, the session
// rule the bridge uses.
var damageLoadOptions = Options{
	Memory:            contract.MemoryConfig{Limit: 2 << 20, SessionLimit: 256 << 10, Policy: contract.AllKeysLRU, Compression: true, CompressionMinSize: 64},
	PinnedPrefixes:    []string{"pin:"},
	SessionDataPrefix: sessionkeys.DataPrefix, SessionLockPrefix: sessionkeys.LockPrefix,
}

// A damage record of FuzzDamagedSegment's input is 8 bytes: when (after
// which share of the calls, of 256), the region and whether its bytes
// are XORed with random ones (bit 7) or written over with them, the length
// (1-65536) and the offset in the region (modulo its size, so that the
// length fits).
const (
	regionHeader = iota
	regionProcs
	regionWaits
	regionShards
	regionIndexes
	regionHeaps
	regionAnywhere
	numRegions
)

type damageRec struct {
	at     int // the call before which it is made
	region int
	xor    bool
	off, n int64
	seed   uint64
}

func parseDamage(g *segment, data []byte, ops int, seed uint64) []damageRec {
	bounds := [numRegions][2]int64{
		{0, headerSize}, {g.procOff, g.waitOff}, {g.waitOff, g.shardOff}, {g.shardOff, g.indexOff},
		{g.indexOff, g.heapOff}, {g.heapOff, g.segSize}, {0, g.segSize},
	}
	var recs []damageRec
	for i := 0; i+8 <= len(data) && len(recs) < 64; i += 8 {
		d := data[i : i+8]
		r := damageRec{at: int(d[0]) * ops / 256, region: int(d[1]&0x7f) % numRegions, xor: d[1]&0x80 != 0,
			n: int64(binary.LittleEndian.Uint16(d[2:])) + 1, seed: seed + uint64(i)}
		lo, hi := bounds[r.region][0], bounds[r.region][1]
		r.n = min(r.n, hi-lo)
		r.off = lo + int64(binary.LittleEndian.Uint32(d[4:]))%(hi-lo-r.n+1)
		recs = append(recs, r)
	}
	slices.SortStableFunc(recs, func(a, b damageRec) int { return cmp.Compare(a.at, b.at) })
	return recs
}

// apply makes the damage r in the mapping of g, live.
func (r *damageRec) apply(g *segment) {
	b := g.bytes(r.off, int(r.n))
	x := rand.New(rand.NewPCG(r.seed, 26))
	for i := range b {
		if v := byte(x.Uint32()); r.xor {
			b[i] ^= v | 1 // a flip
		} else {
			b[i] = v
		}
	}
}

// FuzzDamagedSegment damages a live segment while a worker process runs a
// mixed load on it (every member, values of 1 B-64 KiB, lz4, eviction,
// sessions, fences, read/write locks): input data is a list of damage
// records (damageRec) made between calls or, with during, by a goroutine
// of its own while two others make calls. Every input must see the worker
// end by itself in time, having had an answer (a result or an error) from
// every call and left no shard locked: a damaged segment costs errors,
// never a crash or a hang. The seeds run in plain go test
// (-shm.damage.ops sets the calls per input); go test -fuzz
// FuzzDamagedSegment looks further.
func FuzzDamagedSegment(f *testing.F) {
	rec := func(at, region byte, xor bool, n int, off uint32) []byte {
		d := make([]byte, 8)
		d[0], d[1] = at, region
		if xor {
			d[1] |= 0x80
		}
		binary.LittleEndian.PutUint16(d[2:], uint16(n-1))
		binary.LittleEndian.PutUint32(d[4:], off)
		return d
	}
	cat := func(rs ...[]byte) []byte { return slices.Concat(rs...) }
	// The two: 512 bytes over index slots, 64 KiB over a heap's start.
	f.Add(uint64(1), false, rec(128, regionIndexes, false, 512, 4096))
	f.Add(uint64(2), false, rec(128, regionHeaps, false, 64<<10, 0))
	// Shard headers (lock words, free-list heads, the spare, counts).
	f.Add(uint64(3), false, cat(rec(64, regionShards, false, 512, 0), rec(160, regionShards, true, 8, 256+700)))
	// Flips scattered over the heaps and indexes.
	var flips []byte
	for i := 0; i < 32; i++ {
		flips = append(flips, rec(byte(i*8), byte(regionHeaps+i%2*(regionIndexes-regionHeaps)), true, 1, uint32(i)*7919*13)...)
	}
	f.Add(uint64(4), false, flips)
	// The process and wait tables, and the header.
	f.Add(uint64(5), false, cat(rec(50, regionProcs, false, 4096, 0), rec(100, regionWaits, false, 4096, 0),
		rec(150, regionHeader, true, 64, 88)))
	// Anything, anywhere, while calls run.
	f.Add(uint64(6), true, cat(rec(32, regionAnywhere, false, 4096, 123456), rec(96, regionHeaps, true, 2048, 99991),
		rec(160, regionIndexes, false, 64, 777), rec(224, regionShards, true, 128, 0)))
	f.Add(uint64(7), true, flips)
	f.Fuzz(func(t *testing.T, seed uint64, during bool, data []byte) {
		name := fmt.Sprintf("fz%d-%d", os.Getpid(), rand.Uint32())
		removeSegment(name)
		t.Cleanup(func() { removeSegment(name) })
		w := startWorker(t, "damageload", []string{"SHM_NAME=" + name, fmt.Sprint("SHM_SEED=", seed),
			fmt.Sprint("SHM_DURING=", during), "SHM_DAMAGE=" + hex.EncodeToString(data), fmt.Sprint("SHM_OPS=", *damageOps)})
		exited := make(chan error, 1)
		var lines []string
		go func() {
			for l := range w.lines {
				lines = append(lines, l)
			}
			exited <- w.cmd.Wait()
		}()
		bound := 60*time.Second + time.Duration(*damageOps)*10*time.Millisecond
		select {
		case err := <-exited:
			require.NoError(t, err, "the worker ended by itself, cleanly; it printed:\n%s", strings.Join(lines, "\n"))
		case <-time.After(bound):
			w.cmd.Process.Signal(syscall.SIGQUIT) // its goroutines' stacks, on stderr
			<-exited
			t.Fatalf("the worker hung: no answer within %v; it printed:\n%s", bound, strings.Join(lines, "\n"))
		}
		require.NotEmpty(t, lines)
		for _, l := range lines[:len(lines)-1] {
			if !strings.HasPrefix(l, "error ") {
				t.Errorf("%s", l)
			}
		}
		require.True(t, strings.HasPrefix(lines[len(lines)-1], "done "), "it answered every call: %q", lines[len(lines)-1])
		t.Logf("%s", strings.Join(lines, "\n"))
	})
}

// damageLoadWorker is FuzzDamagedSegment's worker: it makes the segment
// SHM_NAME, runs SHM_OPS calls of a mixed load from SHM_SEED on it and
// makes the damage SHM_DAMAGE (hex) as it goes, between its calls or, with
// SHM_DURING, while two goroutines make them. It prints "error KIND: ERR"
// for the first error of each kind, "bad ..." for a lock it left held,
// and "done CALLS ERRORS (N evictions)" once every call has answered, and
// Check and Close have too.
func damageLoadWorker() {
	seed, _ := strconv.ParseUint(os.Getenv("SHM_SEED"), 10, 64)
	ops, _ := strconv.Atoi(os.Getenv("SHM_OPS"))
	during := os.Getenv("SHM_DURING") == "true"
	data, _ := hex.DecodeString(os.Getenv("SHM_DAMAGE"))
	s, err := Open(os.Getenv("SHM_NAME"), damageLoadOptions)
	if err != nil {
		fmt.Println("bad open:", err)
		return
	}
	recs := parseDamage(s.g, data, ops, seed)
	var mu sync.Mutex
	seen := map[string]bool{}
	var calls, errs atomic.Int64
	note := func(err error) {
		calls.Add(1)
		if err == nil {
			return
		}
		errs.Add(1)
		kind := "other"
		switch {
		case errors.Is(err, ErrCorrupt):
			kind = "corrupt"
		case errors.Is(err, contract.ErrNoMemory):
			kind = "nomem"
		}
		mu.Lock()
		if !seen[kind] {
			seen[kind] = true
			msg := strings.ReplaceAll(err.Error(), "\n", "; ")
			fmt.Printf("error %s: %s\n", kind, msg[:min(len(msg), 300)])
		}
		mu.Unlock()
	}
	// held reports a shard lock this process holds between its calls.
	held := func() {
		for i := range s.shards {
			if w := atomic.LoadUint32(s.shards[i].u32(sLock)); w&^contended == s.tag {
				fmt.Printf("bad shard %d left locked by this process\n", i)
			}
		}
	}
	if !during {
		r := rand.New(rand.NewPCG(seed, 1))
		for op := 0; op < ops; op++ {
			for len(recs) > 0 && recs[0].at <= op {
				recs[0].apply(s.g)
				recs = recs[1:]
			}
			damageCall(s, r, op, note)
			held()
		}
	} else {
		var done atomic.Int64 // calls made
		var wg sync.WaitGroup
		for g := uint64(0); g < 2; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(seed, 2+g))
				for op := 0; op < ops/2; op++ {
					damageCall(s, r, op, note)
					done.Add(1)
				}
			}()
		}
		for _, rec := range recs {
			for done.Load() < int64(min(rec.at, ops/2*2)) {
				time.Sleep(50 * time.Microsecond)
			}
			rec.apply(s.g)
		}
		wg.Wait()
		held()
	}
	note(s.Check()) // whatever it finds: an answer
	n := calls.Load()
	var evictions uint64
	for i := range s.shards {
		evictions += atomic.LoadUint64(s.shards[i].u64(sCounters + cEvictions*8))
	}
	s.Close()
	fmt.Printf("done %d %d (%d evictions)\n", n, errs.Load(), evictions)
}

// damageCall makes call number op of the damage load: a random member on
// a random key of a set that overfills the segment, so that keys are
// written, read, replaced, locked, evicted and removed again and again.
func damageCall(s *Store, r *rand.Rand, op int, note func(error)) {
	key := fmt.Sprintf("k:%d", r.IntN(256))
	value := func() []byte {
		switch r.IntN(4) {
		case 0:
			return crashValue(r.Uint64()|1, 1+r.IntN(64<<10)) // stored plain: the segment fills
		case 1:
			return crashValue(r.Uint64(), 1+r.IntN(2<<10)) // lz4 shrinks half of them
		}
		return crashValue(r.Uint64(), 1+r.IntN(64))
	}
	ttl := time.Duration(0)
	if r.IntN(3) == 0 {
		ttl = time.Duration(1+r.IntN(50)) * time.Millisecond
	}
	dst := make([]byte, 64<<10)
	tok := []byte(fmt.Sprint("t", r.IntN(4)))
	var err error
	switch r.IntN(20) {
	case 0, 1, 2:
		err = s.Set(key, value(), ttl)
	case 3, 4, 5:
		_, _, err = s.GetInto(key, dst)
	case 6:
		_, err = s.Del(key)
	case 7:
		_, err = s.SetNX("lock:"+key, tok, time.Second)
	case 8:
		_, err = s.DelIfEq("lock:"+key, tok)
	case 9:
		_, err = s.IncrBy(fmt.Sprint("ctr:", r.IntN(4)), 1, 0)
	case 10:
		_, err = s.Expire(key, ttl)
	case 11:
		_, err = backend.SetGuarded(s, key, value(), ttl, "lock:"+key, tok)
	case 12:
		_, err = backend.DelGuarded(s, key, "lock:"+key, tok)
	case 13:
		out, fence, err1 := backend.SetNXFenced(s, "fl:"+key, tok, time.Second)
		if err = err1; err == nil && out == contract.Inserted {
			_, err = s.SetFencedToken(key, value(), ttl, "fl:"+key, fence, tok)
		}
	case 14:
		mode := contract.LockMode(r.IntN(2))
		_, _, err = s.LockAttempt("rw:"+key, tok, mode, time.Second, 0)
		if err == nil {
			_, _, err = s.LockInfo("rw:" + key)
		}
		if err == nil {
			_, err = s.LockRelease("rw:"+key, tok)
		}
	case 15:
		sid := fmt.Sprint(r.IntN(16))
		_, _, _, err = backend.SetNXGet(s, sessionkeys.LockKey(sid), tok, time.Second, sessionkeys.DataKey(sid), dst)
		if err == nil {
			_, err = backend.SetGuardedRelease(s, sessionkeys.DataKey(sid), value(), time.Minute, sessionkeys.LockKey(sid), tok)
		}
	case 16:
		_, err = s.Wait("lock:"+key, time.Millisecond)
	case 17:
		_, _, err = s.PTTL(key)
		if err == nil {
			_, err = s.Exists(key)
		}
	case 18:
		_, err = s.Stats()
	case 19:
		if op%97 == 0 {
			err = s.Flush()
		} else {
			err = s.Set("pin:"+key, value(), 0)
		}
	}
	note(err)
}
