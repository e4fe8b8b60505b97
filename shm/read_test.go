package shm

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

// readLengths are the lengths of the values TestAnUnlockedReadIsNeverTorn
// writes: the value filled with byte f is readLengths[f%len] long, so a
// read that mixed two values shows either two bytes or a wrong length.
var readLengths = []int{1, 7, 64, 300, 2000, 4000}

func fillValue(f byte) []byte {
	v := make([]byte, readLengths[int(f)%len(readLengths)])
	for i := range v {
		v[i] = f
	}
	return v
}

func checkFilled(v []byte) error {
	if len(v) == 0 {
		return fmt.Errorf("an empty value")
	}
	f := v[0]
	if want := readLengths[int(f)%len(readLengths)]; len(v) != want {
		return fmt.Errorf("a value of byte %d is %d bytes long, not %d", f, len(v), want)
	}
	for i, c := range v {
		if c != f {
			return fmt.Errorf("byte %d of a value of byte %d is %d", i, f, c)
		}
	}
	return nil
}

// TestAnUnlockedReadIsNeverTorn: readers get one key with no lock while a
// writer rewrites it at changing sizes (its old block waiting as the spare
// and taken again: a block rewritten under the readers' eyes) and another
// writer fills and empties the same shard around it (splits, merges, index
// slots reused and compacted). All start together at a barrier and run for
// a second and until 10000 reads and 1000 changes of the shard are done,
// however slowly the host runs them. Every read is a value as written,
// never a mix; and the reads did go without the lock, which the hit counter
// and the change count show.
func TestAnUnlockedReadIsNeverTorn(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 8 << 20, Policy: contract.AllKeysLRU})
	const key = "torn:key"
	require.NoError(t, s.Set(key, fillValue(0), 0))
	sh, _, _ := s.locate(key)
	var others []string
	for i := 0; len(others) < 64; i++ {
		if k := fmt.Sprintf("torn:other:%d", i); s.shardOf(k).i == sh.i {
			others = append(others, k)
		}
	}
	const readers = 3
	const enoughReads, enoughChanges = 10000, 1000
	var start, done sync.WaitGroup
	start.Add(1)
	var stop atomic.Bool
	errs := make(chan error, readers+2)
	var reads, hits atomic.Int64
	done.Add(readers + 2)
	go func() { // the rewriter
		defer done.Done()
		start.Wait()
		for f := byte(1); !stop.Load(); f++ {
			if f == 0 {
				f = 1
			}
			if err := s.Set(key, fillValue(f), 0); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() { // the neighbours
		defer done.Done()
		start.Wait()
		for i := 0; !stop.Load(); i++ {
			k := others[i%len(others)]
			var err error
			if i%3 == 2 {
				_, err = s.Del(k)
			} else {
				err = s.Set(k, fillValue(byte(i)), 0)
			}
			if err != nil {
				errs <- err
				return
			}
		}
	}()
	for r := 0; r < readers; r++ {
		go func() {
			defer done.Done()
			dst := make([]byte, 8192)
			start.Wait()
			for !stop.Load() {
				n, found, err := s.GetInto(key, dst)
				if err != nil || !found {
					errs <- fmt.Errorf("get: found %v, %v", found, err)
					return
				}
				if err := checkFilled(dst[:n]); err != nil {
					errs <- err
					return
				}
				reads.Add(1)
			}
		}()
	}
	before := s.hitsOf(sh)
	seqBefore := atomic.LoadUint64(sh.u64(sSeq))
	start.Done() // the barrier
	began := time.Now()
	for len(errs) == 0 && (time.Since(began) < time.Second || reads.Load() < enoughReads ||
		atomic.LoadUint64(sh.u64(sSeq))-seqBefore < enoughChanges) {
		if time.Since(began) > time.Minute {
			t.Errorf("a minute in, still short of %d reads and %d changes: hung", enoughReads, enoughChanges)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop.Store(true)
	done.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	hits.Store(int64(s.hitsOf(sh) - before))
	t.Logf("%d reads, %d releases of the shard's lock", reads.Load(), atomic.LoadUint64(sh.u64(sSeq))-seqBefore)
	require.GreaterOrEqual(t, reads.Load(), int64(enoughReads))
	assert.Equal(t, reads.Load(), hits.Load(), "every read counted once")
	require.NoError(t, s.Check())
}

func (s *Store) hitsOf(sh *shard) uint64 { return atomic.LoadUint64(sh.u64(sCounters + cHits*8)) }

// TestAReadUnderAChangeWaitsForTheLock: with the shard's lock held (its
// holder may be changing the shard) a get does not read with no lock: it
// waits for the lock and reads what the holder left.
func TestAReadUnderAChangeWaitsForTheLock(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	require.NoError(t, s.Set("key", []byte("old"), 0))
	sh, _, _ := s.locate("key")
	require.NoError(t, s.lock(sh))
	got := make(chan string, 1)
	go func() {
		v, _ := get(t, s, "key")
		got <- v
	}()
	// The reader is waiting once it has set the contended bit.
	require.Eventually(t, func() bool { return atomic.LoadUint32(sh.u32(sLock))&contended != 0 },
		hangLimit, time.Millisecond)
	// A change the reader must not see half-made: the new value written in
	// place, as no write does, so that a read with no lock would show it
	// torn or early.
	_, _, tag := s.locate("key")
	_, b, _ := sh.lookup(tag, "key")
	copy(sh.entryStored(b), "new")
	s.unlock(sh)
	assert.Equal(t, "new", <-got)
}

// TestABrokenShardAnswersNoRead: a shard marked broken (recovery found it
// corrupt) fails its gets as its other calls, with no lock taken or not.
func TestABrokenShardAnswersNoRead(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	require.NoError(t, s.Set("key", []byte("value"), 0))
	_, found := get(t, s, "key")
	require.True(t, found)
	sh, _, _ := s.locate("key")
	atomic.StoreUint32(sh.u32(sBroken), 1)
	_, _, err := s.GetInto("key", make([]byte, 16))
	assert.ErrorIs(t, err, ErrCorrupt)
	_, _, err = s.GetInto("key", make([]byte, 16))
	assert.ErrorIs(t, err, ErrCorrupt, "and again, the lock free")
	atomic.StoreUint32(sh.u32(sBroken), 0) // for the integrity check at cleanup
}

// TestAGetAppliesTheDeadHolderRule: a session lock whose holder's process
// is dead has lapsed (entry.go) for a get as for every other call. A get
// reads with no lock where it can (readUnlocked); it must not answer the
// dead holder's token as held until some locked call removes the entry.
func TestAGetAppliesTheDeadHolderRule(t *testing.T) {
	a := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	b, err := Open(testName(t), Options{})
	require.NoError(t, err)
	defer b.Close()
	const lock = "sess:lock"
	out, err := sessionGrants{b}.SetNX(lock, []byte("token"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	v, found := get(t, a, lock)
	require.True(t, found, "held by a live process")
	require.Equal(t, "token", v)

	// b's process dies: its slot names a process that has exited, as one
	// killed while attached leaves it.
	atomic.StoreUint64(a.g.procIdent(b.slot), atomic.LoadUint64(a.g.procIdent(deadSlot(t, a))))
	_, found = get(t, a, lock)
	assert.False(t, found, "a get sees the dead holder's lock lapsed")
	exists, err := a.Exists(lock)
	require.NoError(t, err)
	assert.False(t, exists)
}

// deadSlot claims a slot for a process that has exited (deadTag) and
// returns it.
func deadSlot(t *testing.T, s *Store) int { return tagSlot(deadTag(t, s)) }
