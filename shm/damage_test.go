package shm

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/kv"
)

// Damaged segments: bytes no process wrote, over a segment's shards. A
// process that meets them gets the corrupt shard's error, never a fault
// (checked.go). A SIGSEGV on the mapping kills a Go process outright, so
// the process that meets the damage is a worker of its own, and the test
// asserts how it ended.

func init() {
	workers["damaged"] = damagedWorker
}

var damageOptions = Options{Memory: kv.MemoryConfig{Limit: 4 << 20}}

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
	_, err = s.SetGuarded(keys[2], []byte("after"), 0, keys[1], []byte("v"))
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
