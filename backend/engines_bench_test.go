package backend_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/memstore"
	"github.com/ephpm/ephpm/sessionkeys"
	"github.com/ephpm/ephpm/shm"
)

// The engines side by side, through the Backend interface as the bridge
// calls them (issue 27 item 2: one engine or two): the in-process store
// (kv), the shared-memory engine on a private anonymous mapping
// (shm.OpenPrivate) and on a segment file in /dev/shm. Each benchmark runs
// the three one after another, so that a round of
//
//	go test -run X -bench Engines -cpu 2 ./backend
//
// repeated in a shell loop alternates them, and a slow spell of a shared
// host falls on all alike.

// engines opens each engine with limit bytes (kv: 0, no limit, as the
// bridge's default leaves it only when configured so; the figures differ
// little) and the bridge's session rule.
func engines(b *testing.B, limit int64, run func(b *testing.B, s backend.Backend)) {
	rule := memstore.Options{SessionDataPrefix: sessionkeys.DataPrefix, SessionLockPrefix: sessionkeys.LockPrefix,
		Memory: contract.MemoryConfig{Limit: limit}, SweepInterval: -1}
	sopts := shm.Options{Memory: contract.MemoryConfig{Limit: limit},
		SessionDataPrefix: rule.SessionDataPrefix, SessionLockPrefix: rule.SessionLockPrefix}
	b.Run("engine=kv", func(b *testing.B) {
		s := memstore.New(rule)
		b.Cleanup(s.Close)
		run(b, backend.Memory{Store: s})
	})
	b.Run("engine=private", func(b *testing.B) {
		s, err := shm.OpenPrivate(sopts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		run(b, s)
	})
	b.Run("engine=file", func(b *testing.B) {
		name := fmt.Sprintf("bench-engines-%d", time.Now().UnixNano())
		s, err := shm.Open(name, sopts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			s.Close()
			os.Remove(s.Path())
			os.Remove(s.Path() + ".fences1")
		})
		run(b, s)
	})
}

var engineKeyID atomic.Int64

func engineKey(prefix string) string { return prefix + strconv.FormatInt(engineKeyID.Add(1), 10) }

var engineSizes = []int{64, 4 << 10}

func engineSize(n int) string {
	if n >= 1024 {
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}

// One goroutine: a get (hit), a set (replacing), a lock pair (set_nx with
// a TTL, del_if_eq).
func BenchmarkEnginesGet(b *testing.B) {
	for _, n := range engineSizes {
		b.Run(engineSize(n), func(b *testing.B) {
			engines(b, 64<<20, func(b *testing.B, s backend.Backend) {
				s.Set("key", make([]byte, n), 0)
				dst := make([]byte, n)
				for b.Loop() {
					s.GetInto("key", dst)
				}
			})
		})
	}
}

func BenchmarkEnginesSet(b *testing.B) {
	for _, n := range engineSizes {
		b.Run(engineSize(n), func(b *testing.B) {
			engines(b, 64<<20, func(b *testing.B, s backend.Backend) {
				v := make([]byte, n)
				for b.Loop() {
					s.Set("key", v, 0)
				}
			})
		})
	}
}

func BenchmarkEnginesLockPair(b *testing.B) {
	engines(b, 64<<20, func(b *testing.B, s backend.Backend) {
		tok := []byte("0123456789abcdef0123456789abcdef")
		for b.Loop() {
			s.SetNX("lock", tok, 30*time.Second)
			s.DelIfEq("lock", tok)
		}
	})
}

// The embedding host: many threads calling at once, each on keys of its
// own. par=1 is one goroutine per GOMAXPROCS, par=4 four (8 at -cpu 2).
// Each goroutine reads and writes its own key, and takes and releases its
// own lock.
func BenchmarkEnginesParallel(b *testing.B) {
	tok := []byte("0123456789abcdef0123456789abcdef")
	for _, par := range []int{1, 4} {
		for _, op := range []string{"get64B", "set64B", "get4KiB", "set4KiB", "lockpair"} {
			b.Run(fmt.Sprintf("par=%d/%s", par, op), func(b *testing.B) {
				engines(b, 64<<20, func(b *testing.B, s backend.Backend) {
					n := 64
					if strings.HasSuffix(op, "4KiB") {
						n = 4 << 10
					}
					v := make([]byte, n)
					b.SetParallelism(par)
					b.ResetTimer() // not the store's opening
					b.RunParallel(func(pb *testing.PB) {
						k := engineKey("k:")
						dst := make([]byte, n)
						s.Set(k, v, 0)
						switch op[:3] {
						case "get":
							for pb.Next() {
								s.GetInto(k, dst)
							}
						case "set":
							for pb.Next() {
								s.Set(k, v, 0)
							}
						default:
							k = engineKey("lock:")
							for pb.Next() {
								s.SetNX(k, tok, 30*time.Second)
								s.DelIfEq(k, tok)
							}
						}
					})
				})
			})
		}
	}
}

// BenchmarkEnginesMemoryPerEntry inserts 1 M entries of 64-byte values
// with 11-byte keys (kv's BenchmarkMemoryPerEntry) into a store opened
// for it and reports, per entry:
// the growth of the Go heap's live bytes, of the process's resident
// anonymous and shared memory (/proc/self/status RssAnon + RssShmem, after
// a GC that returns free heap to the system), of its virtual size, and the
// bytes the store charges. Run one engine per process (the figures are
// the process's), -benchtime 1x:
//
//	go test -run X -bench 'EnginesMemoryPerEntry/engine=kv$' -benchtime 1x ./backend
//
// The shm engines are sized 160 MiB, about the smallest limit that holds
// the million entries (kv: no limit).
func BenchmarkEnginesMemoryPerEntry(b *testing.B) {
	const n = 1_000_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("key:%07d", i)
	}
	v := bytes.Repeat([]byte("v"), 64)
	// Measured from before the store is opened: a segment's mapping, made
	// whole when it is opened, counts too.
	var before, after runtime.MemStats
	settle()
	runtime.ReadMemStats(&before)
	st0 := procStatus(b)
	engines(b, 160<<20, func(b *testing.B, s backend.Backend) {
		for i := 0; i < b.N; i++ {
			for _, k := range keys {
				if err := s.Set(k, v, 0); err != nil {
					b.Fatalf("%s: %v", k, err)
				}
			}
			settle()
			runtime.ReadMemStats(&after)
			st1 := procStatus(b)
			stats, _ := s.Stats()
			if stats.Keys != n {
				b.Fatalf("%d keys, want %d", stats.Keys, n)
			}
			per := func(k string) float64 { return float64(st1[k]-st0[k]) * 1024 / n }
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "heap-B/entry")
			b.ReportMetric(per("RssAnon")+per("RssShmem"), "rss-B/entry")
			b.ReportMetric(per("VmSize"), "virt-B/entry")
			b.ReportMetric(float64(stats.BytesUsed)/n, "charged-B/entry")
		}
	})
}

func settle() {
	runtime.GC()
	debug.FreeOSMemory()
}

// procStatus reads the kB fields of /proc/self/status.
func procStatus(b *testing.B) map[string]int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	m := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		if f := strings.Fields(v); len(f) == 2 && f[1] == "kB" {
			m[k], _ = strconv.ParseInt(f[0], 10, 64)
		}
	}
	return m
}
