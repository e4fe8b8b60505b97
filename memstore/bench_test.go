package memstore

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// go test -run XXX -bench . -cpu 1,2 ./memstore
//
// Each benchmark runs on one key per goroutine (no shard contention between
// them) so that -cpu shows how throughput scales with GOMAXPROCS.

var sizes = []int{64, 4 << 10, 64 << 10}

func sizeName(n int) string {
	if n >= 1024 {
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}

func benchStore(b *testing.B) *Store {
	s := New(Options{})
	b.Cleanup(s.Close)
	return s
}

var goroutineID atomic.Int64

func perGoroutineKey(prefix string) string {
	return prefix + strconv.FormatInt(goroutineID.Add(1), 10)
}

func BenchmarkGet(b *testing.B) {
	for _, n := range sizes {
		b.Run(sizeName(n), func(b *testing.B) {
			s := benchStore(b)
			v := bytes.Repeat([]byte("v"), n)
			b.SetBytes(int64(n))
			b.RunParallel(func(pb *testing.PB) {
				k := perGoroutineKey("get:")
				dst := make([]byte, n) // one per goroutine: a shared one would bounce
				s.Set(k, v, 0)
				for pb.Next() {
					s.GetInto(k, dst)
				}
			})
		})
	}
}

func BenchmarkSet(b *testing.B) {
	for _, n := range sizes {
		b.Run(sizeName(n), func(b *testing.B) {
			s := benchStore(b)
			v := bytes.Repeat([]byte("v"), n)
			b.SetBytes(int64(n))
			b.RunParallel(func(pb *testing.PB) {
				k := perGoroutineKey("set:")
				for pb.Next() {
					s.Set(k, v, 0)
				}
			})
		})
	}
}

// A lock taken and released: SetNX with a TTL, then DelIfEq, in an empty
// store and in one holding a million entries without a TTL (where a lock's
// bookkeeping must not cost in proportion to the entries around it).
func BenchmarkLockPair(b *testing.B) {
	for _, entries := range []int{0, 1 << 20} {
		b.Run("entries="+strconv.Itoa(entries), func(b *testing.B) {
			s := benchStore(b)
			v := make([]byte, 64)
			for i := 0; i < entries; i++ {
				s.Set("fill:"+strconv.Itoa(i), v, 0)
			}
			tok := []byte("0123456789abcdef0123456789abcdef")
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				k := perGoroutineKey("lock:")
				for pb.Next() {
					s.SetNX(k, tok, 30*time.Second)
					s.DelIfEq(k, tok)
				}
			})
		})
	}
}

// BenchmarkFencedLockPair is BenchmarkLockPair's pair with the grant
// minting its fence (SetNXFenced): the fence's cost on the lock path.
func BenchmarkFencedLockPair(b *testing.B) {
	s := benchStore(b)
	tok := []byte("0123456789abcdef0123456789abcdef")
	b.RunParallel(func(pb *testing.PB) {
		k := perGoroutineKey("lock:")
		for pb.Next() {
			s.SetNXFenced(k, tok, 30*time.Second)
			s.DelIfEq(k, tok)
		}
	})
}

// BenchmarkRWLockPair is a lock_acquire and lock_release pair: exclusive
// (the token as set_nx leaves it), and shared beside others readers
// already holding the name (the record is read and rewritten whole).
func BenchmarkRWLockPair(b *testing.B) {
	tok := []byte("0123456789abcdef0123456789abcdef")
	b.Run("exclusive", func(b *testing.B) {
		s := benchStore(b)
		b.RunParallel(func(pb *testing.PB) {
			k := perGoroutineKey("lock:")
			for pb.Next() {
				s.LockAttempt(k, tok, contract.LockExclusive, 30*time.Second, 0)
				s.LockRelease(k, tok)
			}
		})
	})
	for _, others := range []int{0, 10, 100} {
		b.Run("shared/others="+strconv.Itoa(others), func(b *testing.B) {
			s := benchStore(b)
			b.RunParallel(func(pb *testing.PB) {
				k := perGoroutineKey("lock:")
				for i := 0; i < others; i++ {
					s.LockAttempt(k, []byte(strconv.Itoa(i)+":"+string(tok)), contract.LockShared, time.Hour, 0)
				}
				for pb.Next() {
					s.LockAttempt(k, tok, contract.LockShared, 30*time.Second, 0)
					s.LockRelease(k, tok)
				}
			})
		})
	}
}

func BenchmarkIncrBy(b *testing.B) {
	s := benchStore(b)
	b.RunParallel(func(pb *testing.PB) {
		k := perGoroutineKey("n:")
		for pb.Next() {
			s.IncrBy(k, 1, 0)
		}
	})
}

// Reads of compressed values pay for decompression on every read; these
// are the figures behind not caching decompressed values (docs/design.md).
func BenchmarkGetCompressed(b *testing.B) {
	for _, n := range sizes[1:] {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/lz4=%v", sizeName(n), on), func(b *testing.B) {
				s := benchStore(b)
				s.Configure(contract.MemoryConfig{Compression: on, CompressionMinSize: 1024})
				v := bytes.Repeat([]byte("some html <div class=\"row\">text</div> "), n/38+1)[:n]
				s.Set("k", v, 0)
				dst := make([]byte, n)
				b.SetBytes(int64(n))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					s.GetInto("k", dst)
				}
			})
		}
	}
}

// Memory per entry for 1 M entries of 64-byte values with 11-byte keys:
// heap growth divided by entries, and what remains beyond key and value.
func BenchmarkMemoryPerEntry(b *testing.B) {
	const n = 1_000_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("key:%07d", i)
	}
	v := make([]byte, 64)
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s := New(Options{SweepInterval: -1})
		for _, k := range keys {
			s.Set(k, v, 0)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per := float64(after.HeapAlloc-before.HeapAlloc) / n
		b.ReportMetric(per, "B/entry")
		b.ReportMetric(per-float64(len(keys[0])+len(v)), "overhead-B/entry")
		b.ReportMetric(float64(s.Stats().BytesUsed)/n, "charged-B/entry")
		runtime.KeepAlive(s)
	}
}
