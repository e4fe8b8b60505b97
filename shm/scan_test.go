package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
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
	"github.com/ephpm/ephpm/internal/barrier"
)

// walk runs a whole Scan walk with pages of count and returns every entry
// it returned, by key, and how many times each was.
func walk(t *testing.T, s *Store, count int, locksOnly bool) (map[string]backend.KeyInfo, map[string]int, []string) {
	t.Helper()
	seen, times := map[string]backend.KeyInfo{}, map[string]int{}
	var skipped []string
	var cursor uint64
	for pages := 0; ; pages++ {
		require.Less(t, pages, 1<<20, "the walk ends")
		p, err := s.Scan("", cursor, count, locksOnly)
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Keys), count+s.g.indexSlots, "a page holds about count entries")
		for _, k := range p.Keys {
			seen[k.Key] = k
			times[k.Key]++
		}
		skipped = append(skipped, p.Skipped...)
		if p.Next == 0 {
			return seen, times, skipped
		}
		cursor = p.Next
	}
}

func TestScanReturnsEachLiveEntryWithItsSizeTTLAndKind(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 4 << 20, Compression: true, CompressionMinSize: 64})
	want := map[string]int{}
	for i := 0; i < 3000; i++ {
		k := "k:" + strconv.Itoa(i)
		v := []byte(fmt.Sprintf("%0*d", i%300, i)) // compressed past 64 bytes
		require.NoError(t, s.Set(k, v, 0))
		want[k] = len(v)
	}
	// The locks and the TTL last an hour: three walks of 3000 entries take
	// minutes on a loaded host, and the TTL is checked against the time
	// that has really passed since it was set.
	ttlSet := time.Now()
	require.NoError(t, s.Set("ttl", []byte("x"), time.Hour))
	require.NoError(t, s.Set("gone", []byte("x"), time.Millisecond))
	out, err := s.SetNX("lock:a", []byte("token"), time.Hour)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	for _, tok := range []string{"r1", "r2"} {
		out, _, err := s.LockAttempt("lock:rw", []byte(tok), contract.LockShared, time.Hour, 0)
		require.NoError(t, err)
		require.Equal(t, contract.Inserted, out)
	}
	for deadline := time.Now().Add(hangLimit); ; {
		if _, found, _ := s.PTTL("gone"); !found {
			break
		}
		require.True(t, time.Now().Before(deadline), "a 1 ms TTL passes")
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, s.Set("gone", []byte("x"), time.Millisecond)) // expired, not removed, when the walk meets it
	time.Sleep(20 * time.Millisecond)

	for _, count := range []int{1, 7, 1000} {
		seen, _, skipped := walk(t, s, count, false)
		assert.Empty(t, skipped)
		for k, n := range want {
			if assert.Contains(t, seen, k, "count %d", count) {
				assert.Equal(t, int64(n), seen[k].Size, k)
				assert.Equal(t, time.Duration(-1), seen[k].TTL, k)
				assert.False(t, seen[k].Lock, k)
			}
		}
		assert.NotContains(t, seen, "gone", "an expired entry is no entry")
		if assert.Contains(t, seen, "ttl") {
			// Within a tick either way of what is left (docs: a TTL is kept
			// to within a tick; a second is far beyond any tick).
			left := seen["ttl"].TTL
			assert.LessOrEqual(t, left, time.Hour+time.Second, "count %d", count)
			assert.GreaterOrEqual(t, left, time.Hour-time.Since(ttlSet)-time.Second, "count %d", count)
		}
		assert.True(t, seen["lock:a"].Lock)
		assert.Equal(t, 2, seen["lock:rw"].Readers)
		assert.Len(t, seen, len(want)+3)
	}
	locks, _, _ := walk(t, s, 5, true)
	assert.Len(t, locks, 2, "only the locks")
	assert.Contains(t, locks, "lock:a")
	assert.Contains(t, locks, "lock:rw")
	_, found, err := s.PTTL("gone")
	require.NoError(t, err)
	assert.False(t, found)
}

func TestScanRefusesACursorItDidNotReturn(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: MinMemoryLimit})
	for _, c := range []uint64{uint64(len(s.shards)) << 32, uint64(s.g.indexSlots + 1), 1 << 63} {
		_, err := s.Scan("", c, 10, false)
		assert.ErrorIs(t, err, contract.ErrInvalidArgument, "cursor %d", c)
	}
}

// Writers adding and removing keys while a walk goes on (tombstones,
// compactions of small indexes) never hide a key that stays.
func TestScanWithWritersChurningMissesNoKeyThatStays(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: MinMemoryLimit, Policy: contract.AllKeysLRU})
	stay := map[string]bool{}
	for i := 0; i < 300; i++ {
		k := "stay:" + strconv.Itoa(i)
		require.NoError(t, s.Set(k, []byte("v"), 0))
		stay[k] = true
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for !stop.Load() {
				k := "churn:" + strconv.Itoa(w) + ":" + strconv.Itoa(r.IntN(800))
				if r.IntN(2) == 0 {
					_ = s.Set(k, []byte("c"), 0)
				} else {
					_, _ = s.Del(k)
				}
			}
		}(w)
	}
	for round := 0; round < 20; round++ {
		seen, _, skipped := walk(t, s, 3, false)
		require.Empty(t, skipped)
		for k := range stay {
			require.Contains(t, seen, k, "round %d", round)
		}
	}
	stop.Store(true)
	wg.Wait()
}

// An entry live for the whole walk is returned though it sits past the
// wrap (its run goes on from the last slot to slot 0) and a compaction
// runs between two pages: the compaction leaves it below the cursor,
// where it was, instead of moving it up into the slots the walk visited.
func TestScanReturnsAnEntryPastTheWrapThroughACompaction(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 2 << 20})
	n := s.g.indexSlots
	sh := &s.shards[0]
	a, b, f, e := keyAt(s, "a", n-3), keyAt(s, "b", n-2), keyAt(s, "f", n-1), keyAt(s, "e", n-3)
	for _, k := range []string{a, b, f, e} {
		require.NoError(t, s.Set(k, []byte("v"), 0))
	}
	slotOf := func(k string) int { p, _, _ := sh.lookup(tagOfHash(s.g.hashOf(k)), k); return p }
	require.Equal(t, []int{n - 3, n - 2, n - 1, 0}, []int{slotOf(a), slotOf(b), slotOf(f), slotOf(e)})
	_, err := s.Del(b) // a tombstone in e's probe path
	require.NoError(t, err)

	p, err := s.Scan("", 0, 2, false) // f, then a: the walk is below n-3
	require.NoError(t, err)
	require.Len(t, p.Keys, 2)
	// A writer's roomFor compacts the shard (once entries and tombstones
	// fill seven eighths of its index), then another caller deletes f.
	require.NoError(t, s.lock(sh))
	sh.compact()
	s.unlock(sh)
	assert.Equal(t, 0, slotOf(e), "e stays past the wrap")
	_, err = s.Del(f)
	require.NoError(t, err)

	seen := map[string]bool{}
	for _, k := range p.Keys {
		seen[k.Key] = true
	}
	for cursor := p.Next; cursor != 0; {
		p, err := s.Scan("", cursor, 1000, false)
		require.NoError(t, err)
		for _, k := range p.Keys {
			seen[k.Key] = true
		}
		cursor = p.Next
	}
	require.True(t, seen[e], "e was live for the whole walk but the walk never returned it")
	require.True(t, seen[a])
}

func TestScanOfLocksNamesTheirHolderAndWaiters(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{})
	// A session lock the session handler's call takes records this process.
	out, _, _, err := backend.SetNXGet(s, "session_lock:abc", []byte("tok"), time.Hour, "session:abc", nil)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	_, err = s.SetNX("lock:w", []byte("tok"), time.Hour) // outlives every hang catch below
	require.NoError(t, err)
	done := make(chan bool)
	go func() {
		free, _ := s.Wait("lock:w", 5*hangLimit)
		done <- free
	}()
	var locks map[string]backend.KeyInfo
	for deadline := time.Now().Add(hangLimit); ; {
		locks, _, _ = walk(t, s, 100, true)
		if locks["lock:w"].Waiters == 1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the waiter registers: %+v", locks["lock:w"])
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, os.Getpid(), locks["session_lock:abc"].HolderPID)
	assert.Zero(t, locks["lock:w"].HolderPID, "set_nx records no holder")
	_, err = s.Del("lock:w")
	require.NoError(t, err)
	assert.True(t, <-done)
	locks, _, _ = walk(t, s, 100, true)
	assert.NotContains(t, locks, "lock:w")
}

// A damaged shard is named and skipped; the walk returns the other
// shards' entries, whatever the damage.
func TestScanSkipsADamagedShardAndGoesOn(t *testing.T) {
	for _, c := range []string{"index", "heap"} {
		t.Run(c, func(t *testing.T) {
			name := testName(t)
			removeSegment(name)
			t.Cleanup(func() { removeSegment(name) })
			s, err := Open(name, Options{Memory: contract.MemoryConfig{Limit: 8 << 20}})
			require.NoError(t, err)
			defer s.Close()
			require.Greater(t, len(s.shards), 1)
			var other []string
			for i := 0; i < 2000; i++ {
				k := "k:" + strconv.Itoa(i)
				require.NoError(t, s.Set(k, []byte("value"), 0))
				if sh, _, _ := s.locate(k); sh.i != 0 {
					other = append(other, k)
				}
			}
			sh := &s.shards[0]
			r := rand.New(rand.NewPCG(7, 7))
			switch c {
			case "index": // every live slot points past the heap
				for i := 0; i < s.g.indexSlots; i++ {
					if v := atomic.LoadUint64(sh.slot(i)); v != slotEmpty && v != slotTomb {
						atomic.StoreUint64(sh.slot(i), uint64(slotTag(v))<<32|uint64(s.g.heapSize/8+int64(r.IntN(1000))))
					}
				}
			case "heap": // random bytes over the shard's heap
				b := s.g.bytes(sh.heap, int(s.g.heapSize))
				for i := range b {
					b[i] = byte(r.Uint32())
				}
			}
			seen, _, skipped := walk(t, s, 50, false)
			require.Len(t, skipped, 1)
			assert.Contains(t, skipped[0], "shard 0 of")
			for _, k := range other {
				assert.Contains(t, seen, k, "every entry of the other shards")
			}
			_, _, err = s.GetInto("k:1", nil)
			if sh, _, _ := s.locate("k:1"); sh.i == 0 {
				assert.True(t, errors.Is(err, ErrCorrupt))
			}
		})
	}
}

// A walk of a segment whose file was removed is refused as every other
// call is: never a complete walk of no entries, and no shard named
// damaged that is not. A damaged shard alone is skipped and named.
func TestScanOfARemovedSegmentIsAnErrorNotAnEmptyWalk(t *testing.T) {
	name := testName(t)
	s := openRemovable(t, name)
	for i := 0; i < 100; i++ {
		require.NoError(t, s.Set("k"+strconv.Itoa(i), []byte("v"), 0))
	}
	p, err := s.Scan("", 0, 10, false)
	require.NoError(t, err)
	require.NotZero(t, p.Next)
	require.NoError(t, os.Remove(Path("", name)))
	require.Error(t, s.Revalidate())
	for _, cursor := range []uint64{0, p.Next} {
		page, err := s.Scan("", cursor, 1000, false)
		requireRemoved(t, err, Path("", name), "a walk of a removed segment")
		assert.Empty(t, page.Keys)
		assert.Empty(t, page.Skipped, "no shard is damaged")
		assert.Zero(t, page.Next)
	}
}

func TestSetCondDecidesAndReturnsTheOldValueInOneStep(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{})
	set := func(k, v string, cond backend.SetCondition, cmp string, get bool) (bool, string, bool) {
		t.Helper()
		ok, old, found, err := s.SetCond(k, []byte(v), 0, cond, []byte(cmp), get)
		require.NoError(t, err)
		return ok, string(old), found
	}
	get := func(k string) string { v, _ := get(t, s, k); return v }
	ok, _, found := set("k", "a", backend.SetIfEqual, "x", true)
	assert.False(t, ok, "IFEQ never creates")
	assert.False(t, found)
	_, found, _ = s.PTTL("k")
	assert.False(t, found)

	ok, old, found := set("k", "a", backend.SetAlways, "", true)
	assert.True(t, ok)
	assert.False(t, found)
	assert.Equal(t, "", old)
	ok, old, found = set("k", "b", backend.SetIfEqual, "x", true)
	assert.False(t, ok)
	assert.True(t, found)
	assert.Equal(t, "a", old, "GET answers the old value when not set too")
	assert.Equal(t, "a", get("k"))
	ok, old, _ = set("k", "b", backend.SetIfEqual, "a", true)
	assert.True(t, ok)
	assert.Equal(t, "a", old)
	assert.Equal(t, "b", get("k"))
	ok, old, _ = set("k", "c", backend.SetAlways, "", false)
	assert.True(t, ok)
	assert.Equal(t, "", old, "nothing read without get")

	ok, old, found = set("lock", "t1", backend.SetIfAbsent, "", true)
	assert.True(t, ok)
	assert.False(t, found)
	ok, old, found = set("lock", "t2", backend.SetIfAbsent, "", true)
	assert.False(t, ok)
	assert.Equal(t, "t1", old)
	assert.True(t, found)
	locks, _, _ := walk(t, s, 10, true)
	assert.Contains(t, locks, "lock", "SetIfAbsent stores a lock, as SetNX")
	assert.NotContains(t, locks, "k")

	ok, _, _, err := s.SetCond("t", []byte("v"), time.Minute, backend.SetIfEqual, nil, false)
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, s.Set("t", []byte(""), 0))
	written := time.Now()
	ok, _, _, err = s.SetCond("t", []byte("v"), time.Minute, backend.SetIfEqual, nil, false)
	require.NoError(t, err)
	assert.True(t, ok, "a nil comparison value is the empty value")
	ttl, _, _ := s.PTTL("t")
	// The TTL given, less the time that has really passed (a second is far
	// beyond a tick either way).
	assert.LessOrEqual(t, ttl, time.Minute+time.Second)
	assert.GreaterOrEqual(t, ttl, time.Minute-time.Since(written)-time.Second)
	_, _, _, err = s.SetCond("", []byte("v"), 0, backend.SetAlways, nil, false)
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
}

// IFEQ is a compare-and-set: of many callers released together with the
// value they read, exactly one replaces it; SET NX GET and SetNX race for
// one lock with one winner.
func TestSetCondRacesHaveOneWinner(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{})
	for round := 0; round < 200; round++ {
		cur := "v" + strconv.Itoa(round)
		require.NoError(t, s.Set("cas", []byte(cur), 0))
		wins := barrier.Race(16, func(i int) bool {
			ok, _, _, err := s.SetCond("cas", []byte(fmt.Sprint(round, "-", i)), 0, backend.SetIfEqual, []byte(cur), false)
			require.NoError(t, err)
			return ok
		})
		require.Equal(t, 1, wins, "round %d", round)

		key := "lock:" + strconv.Itoa(round)
		wins = barrier.Race(16, func(i int) bool {
			if i%2 == 0 {
				out, err := s.SetNX(key, []byte("x"), time.Minute)
				require.NoError(t, err)
				return out == contract.Inserted
			}
			ok, _, _, err := s.SetCond(key, []byte("y"), time.Minute, backend.SetIfAbsent, nil, true)
			require.NoError(t, err)
			return ok
		})
		require.Equal(t, 1, wins, "round %d", round)
	}
}

// SET key token IFEQ token PX ttl is how a Redis client renews a lock:
// the renewed lock stays pinned, so memory pressure never evicts it while
// its holder holds it and a second set_nx never wins it. A plain SET ...
// GET is an overwrite, as Set is, and leaves a plain value.
func TestSetCondIfEqRenewalKeepsTheLockPinnedUnderEviction(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 2 << 20, Policy: contract.AllKeysLRU})
	pinned := func(key string) bool {
		sh, _, tag := s.locate(key)
		require.NoError(t, s.lock(sh))
		defer s.unlock(sh)
		_, b, _ := sh.lookup(tag, key)
		require.NotEqual(t, noBlock, b, "%s is there", key)
		return sh.entryPinned(b)
	}
	out, err := s.SetNX("lock:x", []byte("t1"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	stored, _, _, err := s.SetCond("lock:x", []byte("t1"), time.Minute, backend.SetIfEqual, []byte("t1"), false)
	require.NoError(t, err)
	require.True(t, stored)
	require.True(t, pinned("lock:x"), "renewed with IFEQ, still a lock")
	stored, _, _, err = s.SetCond("lock:x", []byte("t2"), time.Minute, backend.SetIfEqual, []byte("t1"), true)
	require.NoError(t, err)
	require.True(t, stored)
	require.True(t, pinned("lock:x"), "handed on with IFEQ, still a lock")

	_, err = s.SetNX("plain", []byte("a"), time.Minute)
	require.NoError(t, err)
	stored, _, _, err = s.SetCond("plain", []byte("b"), 0, backend.SetAlways, nil, true)
	require.NoError(t, err)
	require.True(t, stored)
	assert.False(t, pinned("plain"), "SET ... GET overwrites as SET does")

	big := make([]byte, 4096)
	for i := 0; i < 3000; i++ { // six times the limit: everything evictable goes
		require.NoError(t, s.Set("fill:"+strconv.Itoa(i), big, 0))
	}
	ok, err := s.Exists("lock:x")
	require.NoError(t, err)
	require.True(t, ok, "the renewed lock was evicted while its holder holds it")
	out, err = s.SetNX("lock:x", []byte("intruder"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Exists, out, "a second set_nx won a held lock")
	v, _ := get(t, s, "lock:x")
	assert.Equal(t, "t2", v)
}

// A session lock renewed with IFEQ keeps its recorded holder: it still
// lapses when that process dies, and the walk of locks still names it.
func TestSetCondIfEqRenewalKeepsASessionLocksHolder(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{})
	out, _, _, err := backend.SetNXGet(s, "session_lock:abc", []byte("tok"), time.Minute, "session:abc", nil)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	stored, _, _, err := s.SetCond("session_lock:abc", []byte("tok"), 2*time.Minute, backend.SetIfEqual, []byte("tok"), false)
	require.NoError(t, err)
	require.True(t, stored)
	sh, _, tag := s.locate("session_lock:abc")
	require.NoError(t, s.lock(sh))
	_, b, _ := sh.lookup(tag, "session_lock:abc")
	holder, pinned := sh.entryHolder(b), sh.entryPinned(b)
	s.unlock(sh)
	assert.Equal(t, s.tag, holder, "the holder is recorded still")
	assert.True(t, pinned)
	locks, _, _ := walk(t, s, 100, true)
	assert.Equal(t, os.Getpid(), locks["session_lock:abc"].HolderPID)
	assert.Greater(t, locks["session_lock:abc"].TTL, time.Minute, "the renewal's TTL")
}

func TestExistingAttachesOnlyAndKeepsTheSegmentsSettings(t *testing.T) {
	name := testName(t)
	removeSegment(name)
	t.Cleanup(func() { removeSegment(name) })
	_, err := Open(name, Options{Existing: true})
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(Path("", name))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing was created")

	cfg := contract.MemoryConfig{Limit: 2 << 20, Policy: contract.AllKeysLRU, Compression: true, CompressionMinSize: 100, SessionLimit: 512 << 10}
	server, err := Open(name, Options{Memory: cfg})
	require.NoError(t, err)
	defer server.Close()
	require.NoError(t, server.Set("k", []byte("v"), 0))
	before := server.MemoryConfig()

	tool, err := Open(name, Options{Existing: true, Owner: UID(os.Geteuid())})
	require.NoError(t, err)
	assert.Equal(t, before, server.MemoryConfig(), "the tool's zero settings were not applied")
	assert.Equal(t, before, tool.MemoryConfig())
	v, _ := get(t, tool, "k")
	assert.Equal(t, "v", v)
	require.NoError(t, tool.Set("k2", []byte("w"), 0))
	require.NoError(t, tool.Close())
	v, _ = get(t, server, "k2")
	assert.Equal(t, "w", v)

	_, err = Open(name, Options{Existing: true, Owner: UID(os.Geteuid() + 4242)})
	require.ErrorIs(t, err, os.ErrNotExist, "another user's segment of that name is another file")
}

// Existing attaches to a segment as it is: with an anchor or a memory
// setting, which say what to make or set, it is refused, and a file of
// another layout, which an anchored Open may replace, is left as it is.
func TestExistingRefusesAnAnchorOrAMemorySettingAndReplacesNothing(t *testing.T) {
	name := testName(t)
	removeSegment(name)
	t.Cleanup(func() { removeSegment(name) })
	srv, err := Open(name, Options{Memory: contract.MemoryConfig{Limit: 2 << 20}, Anchor: os.Getpid()})
	require.NoError(t, err)
	require.NoError(t, srv.Set("k", []byte("v"), 0))
	before := srv.MemoryConfig()
	*srv.g.u32(hVersion) = layoutVersion - 1 // a file of the previous release
	require.NoError(t, srv.Close())

	for _, opts := range []Options{
		{Existing: true, Anchor: os.Getpid()},
		{Existing: true, Memory: contract.MemoryConfig{Limit: 2 << 20}},
		{Existing: true, Memory: contract.MemoryConfig{Policy: contract.AllKeysLRU}},
		{Existing: true, Memory: contract.MemoryConfig{Compression: true}},
	} {
		_, err := Open(name, opts)
		assert.ErrorIs(t, err, contract.ErrInvalidArgument, "%+v", opts)
	}
	_, err = Open(name, Options{Existing: true})
	require.ErrorIs(t, err, ErrIncompatible, "another layout is refused, not made anew")

	f, err := os.OpenFile(Path("", name), os.O_RDWR, 0)
	require.NoError(t, err)
	var v [4]byte
	binary.LittleEndian.PutUint32(v[:], layoutVersion)
	_, err = f.WriteAt(v[:], hVersion) // the release it was made by again
	require.NoError(t, err)
	f.Close()
	s, err := Open(name, Options{Existing: true})
	require.NoError(t, err)
	defer s.Close()
	got, found := get(t, s, "k")
	assert.True(t, found, "the segment was kept, entries and all")
	assert.Equal(t, "v", got)
	assert.Equal(t, before, s.MemoryConfig())
}

func init() { workers["owner"] = ownerWorker }

// ownerWorker, run as a uid other than root's, makes its own segment
// SHM_NAME, then opens SHM_NAME of the uid SHM_OWNER with Existing and
// prints "opened PATH" or "refused ERR".
func ownerWorker() {
	name := os.Getenv("SHM_NAME")
	mine, err := Open(name, Options{})
	if err != nil {
		fmt.Println("bad open:", err)
		return
	}
	defer func() { mine.Close(); os.Remove(mine.Path()) }()
	owner, _ := strconv.Atoi(os.Getenv("SHM_OWNER"))
	s, err := Open(name, Options{Existing: true, Owner: UID(owner)})
	if err != nil {
		fmt.Println("refused", err)
		return
	}
	fmt.Println("opened", s.Path())
	s.Close()
}

// Owner names root's segment too: a process of another uid asking for
// uid 0's is given root's file (which it may not open), never its own.
func TestOwnerNamesRootsSegmentToo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a worker as another uid")
	}
	const nobody = 65534
	name := testName(t)
	removeSegment(name)
	t.Cleanup(func() { removeSegment(name); os.Remove(PathOf("", name, nobody)) })
	root, err := Open(name, Options{})
	require.NoError(t, err)
	defer root.Close()
	// The test binary, where that uid may run it.
	dir, err := os.MkdirTemp("", "ephpm-owner")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	exe := dir + "/shm.test"
	require.NoError(t, os.WriteFile(exe, bin, 0o755))

	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"=owner", "SHM_NAME="+name, "SHM_OWNER=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("worker as uid %d: %s", nobody, out)
	require.True(t, strings.HasPrefix(string(out), "refused "), "uid %d's open of uid 0's segment opened its own: %s", nobody, out)
	assert.Contains(t, string(out), PathOf("", name, 0))
	assert.Contains(t, string(out), "permission denied")

	_, err = Open(name, Options{Owner: UID(nobody)})
	assert.ErrorIs(t, err, contract.ErrInvalidArgument, "a segment this process makes is its own uid's")
	_, err = Open(name, Options{Existing: true, Owner: UID(-1)})
	assert.ErrorIs(t, err, contract.ErrInvalidArgument)
	s, err := Open(name, Options{Existing: true, Owner: UID(0)})
	require.NoError(t, err, "root names its own segment as uid 0")
	assert.Equal(t, PathOf("", name, 0), s.Path())
	s.Close()
}

// Owners reads PathOf backwards: the uids with a segment file of the
// name, and no other file that begins alike; Files are the segment's and
// its fence file.
func TestOwnersAndFilesFollowPathOf(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{
		PathOf(dir, "app", 33), PathOf(dir, "app", 0), PathOf(dir, "app", 1000),
		PathOf(dir, "app", 33) + ".fences1", PathOf(dir, "app.5", 33), PathOf(dir, "apple", 7), dir + "/ephpm-app.x",
	} {
		require.NoError(t, os.WriteFile(f, nil, 0o600))
	}
	uids, err := Owners(dir, "app")
	require.NoError(t, err)
	assert.Equal(t, []int{0, 33, 1000}, uids)
	uids, err = Owners(dir, "app.5")
	require.NoError(t, err)
	assert.Equal(t, []int{33}, uids)
	uids, err = Owners(dir, "none")
	require.NoError(t, err)
	assert.Empty(t, uids)
	assert.Equal(t, []string{dir + "/ephpm-app.33", dir + "/ephpm-app.33.fences1"}, Files(dir, "app", 33))
	assert.Equal(t, "/dev/shm/ephpm-app.33", Files("", "app", 33)[0])

	s := openTest(t, contract.MemoryConfig{})
	_, _, err = backend.SetNXFenced(s, "lock:f", []byte("t"), time.Minute) // makes the fence file
	require.NoError(t, err)
	for _, f := range Files("", testName(t), os.Geteuid()) {
		_, err = os.Stat(f)
		assert.NoError(t, err, "the store's own file %s", f)
	}
	assert.Equal(t, s.Path(), Files("", testName(t), os.Geteuid())[0])
}
