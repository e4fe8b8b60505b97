package shm

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/sessionkeys"
)

func benchStore(b *testing.B) *Store {
	name := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	// The session rule the bridge opens a segment with.
	s, err := Open(name, Options{Memory: contract.MemoryConfig{Limit: 64 << 20},
		SessionDataPrefix: sessionkeys.DataPrefix, SessionLockPrefix: sessionkeys.LockPrefix})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close(); removeSegment(name) })
	return s
}

// BenchmarkSessionVisit is a session request's four calls: the lock, the
// read (a hit: it marks the data read once), the guarded write, the
// release, with the session budget's bookkeeping.
func BenchmarkSessionVisit(b *testing.B) {
	s := benchStore(b)
	tok := []byte("0123456789abcdef0123456789abcdef")
	lock, data := sessionkeys.LockKey("0123456789abcdef0123456789abcdef"), sessionkeys.DataKey("0123456789abcdef0123456789abcdef")
	v := make([]byte, 141)
	dst := make([]byte, 1024)
	s.Set(data, v, time.Hour)
	for b.Loop() {
		s.SetNX(lock, tok, 30*time.Second)
		s.GetInto(data, dst)
		backend.SetGuarded(s, data, v, time.Hour, lock, tok)
		s.DelIfEq(lock, tok)
	}
}

func BenchmarkGet64(b *testing.B) {
	s := benchStore(b)
	s.Set("key", make([]byte, 64), 0)
	dst := make([]byte, 64)
	for b.Loop() {
		s.GetInto("key", dst)
	}
}

func BenchmarkSet64(b *testing.B) {
	s := benchStore(b)
	v := make([]byte, 64)
	for b.Loop() {
		s.Set("key", v, 0)
	}
}

func BenchmarkLockPair(b *testing.B) {
	s := benchStore(b)
	tok := []byte("0123456789abcdef")
	for b.Loop() {
		s.SetNX("lock", tok, 30*time.Second)
		s.DelIfEq("lock", tok)
	}
}

// BenchmarkChurn90 is the fragmentation run: mixed sizes (64 B-64 KiB)
// churned in a 64 MiB store held about 90 % full, b.N writes or deletes
// (-benchtime 60s for a minute). It reports the share of writes refused
// although the store had room (their shard's free bytes too scattered or
// too few) and the lowest fill, as a share of the limit, once filled.
func BenchmarkChurn90(b *testing.B) {
	name := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	s, err := Open(name, Options{Memory: contract.MemoryConfig{Limit: 64 << 20, Policy: contract.NoEviction}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close(); removeSegment(name) })
	st := churn(b, s, b.N)
	b.ReportMetric(float64(st.refusedFragmented+st.refusedShardFull)*100/float64(max(st.writes, 1)), "%refused")
	b.ReportMetric(float64(st.refusedFragmented)*100/float64(max(st.writes, 1)), "%refused-scattered")
	b.ReportMetric(float64(st.lowest)*100/float64(s.g.limit), "%lowest-fill")
	if err := s.Check(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkReadLockPair is lock_acquire (shared) + lock_release on a free
// name: a reader record written and removed, a fence minted.
func BenchmarkReadLockPair(b *testing.B) { benchReadLockPair(b, false) }

// BenchmarkReadLockPairShared is BenchmarkReadLockPair while another
// reader holds the name: each step rewrites a record of two holds.
func BenchmarkReadLockPairShared(b *testing.B) { benchReadLockPair(b, true) }

func benchReadLockPair(b *testing.B, beside bool) {
	s := benchStore(b)
	if beside {
		s.LockAttempt("lock", []byte("the other reader"), contract.LockShared, 0, 0)
	}
	tok := []byte("0123456789abcdef")
	for b.Loop() {
		s.LockAttempt("lock", tok, contract.LockShared, 30*time.Second, 0)
		s.LockRelease("lock", tok)
	}
}

// BenchmarkWriteLockPair is lock_acquire (exclusive) + lock_release, to
// set against BenchmarkLockPair (set_nx + del_if_eq).
func BenchmarkWriteLockPair(b *testing.B) {
	s := benchStore(b)
	tok := []byte("0123456789abcdef")
	for b.Loop() {
		s.LockAttempt("lock", tok, contract.LockExclusive, 30*time.Second, contract.WriterClaim)
		s.LockRelease("lock", tok)
	}
}

// BenchmarkSet64Parallel and BenchmarkLockPairParallel are BenchmarkSet64
// and BenchmarkLockPair from every goroutine of b.RunParallel at once, each
// on a key of its own in a shard of its own: goroutine g's key is in shard
// g*stride (stride 1: neighbours, whose words in the header's array of
// bytes used share a cache line; 8: a line each). At -cpu 1,2 they show
// whether a second thread gains; a word the shards share shows as the loss.
func BenchmarkSet64Parallel(b *testing.B) {
	for _, stride := range []int{1, 8} {
		b.Run(fmt.Sprintf("stride=%d", stride), func(b *testing.B) {
			s := benchStore(b)
			v := make([]byte, 64)
			var id atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				k := keyInShard(s, "key", int(id.Add(1)-1)*stride)
				for pb.Next() {
					s.Set(k, v, 0)
				}
			})
		})
	}
}

func BenchmarkLockPairParallel(b *testing.B) {
	for _, stride := range []int{1, 8} {
		b.Run(fmt.Sprintf("stride=%d", stride), func(b *testing.B) {
			s := benchStore(b)
			tok := []byte("0123456789abcdef")
			var id atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				k := keyInShard(s, "lock", int(id.Add(1)-1)*stride)
				for pb.Next() {
					s.SetNX(k, tok, 30*time.Second)
					s.DelIfEq(k, tok)
				}
			})
		})
	}
}

// keyInShard returns a key of prefix and a number that hashes to shard i
// (modulo the shards).
func keyInShard(s *Store, prefix string, i int) string {
	i %= len(s.shards)
	for n := 0; ; n++ {
		k := fmt.Sprintf("%s%d", prefix, n)
		if sh, _, _ := s.locate(k); sh.i == i {
			return k
		}
	}
}
