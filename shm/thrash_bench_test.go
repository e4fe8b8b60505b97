package shm

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/ephpm/ephpm/memstore"
)

// BenchmarkThrash tests whether the shared-memory store's extra cost from
// PHP is the pages and cache lines its hot path touches: between two
// operations it touches N MiB of unrelated memory, as PHP's executor does
// between two calls, and times only the operation. The shm/memstore difference
// growing with N says the footprint costs; staying flat says it does not.
//
// Strides: "tlb" touches the first line of each 4 KiB page (the TLB's
// entries go, a few cache sets only); "cache" touches every line of the
// region from 2 MiB pages (madvise MADV_HUGEPAGE: the caches go, few TLB
// entries); "both" touches one line per 4 KiB page at a moving offset in
// 4 KiB-page memory (MADV_NOHUGEPAGE).
//
// go test -run XXX -bench Thrash -cpu 1 ./shm
func BenchmarkThrash(b *testing.B) {
	for _, stride := range []string{"tlb", "cache", "both"} {
		for _, mib := range []int{0, 1, 4, 16} {
			if mib == 0 && stride != "tlb" {
				continue
			}
			buf := thrashBuffer(b, mib<<20, stride == "cache")
			for _, store := range []string{"kv", "shm"} {
				for _, op := range []string{"get", "set", "pair"} {
					b.Run(fmt.Sprintf("%s/%dMiB/%s/%s", stride, mib, store, op), func(b *testing.B) {
						f := thrashOp(b, store, op)
						var spent time.Duration
						for b.Loop() {
							thrash(buf, stride)
							t0 := time.Now()
							f()
							spent += time.Since(t0)
						}
						b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "op-ns")
					})
				}
			}
		}
	}
}

var thrashSink byte

func thrash(buf []byte, stride string) {
	var s byte
	switch stride {
	case "tlb":
		for i := 0; i < len(buf); i += 4096 {
			s += buf[i]
		}
	case "cache":
		for i := 0; i < len(buf); i += 64 {
			s += buf[i]
		}
	default:
		for i, j := 0, 0; i < len(buf); i, j = i+4096, j+64 {
			s += buf[i+j&4095]
		}
	}
	thrashSink += s
}

func thrashBuffer(b *testing.B, n int, huge bool) []byte {
	if n == 0 {
		return nil
	}
	buf, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		b.Fatal(err)
	}
	advice := syscall.MADV_NOHUGEPAGE
	if huge {
		advice = syscall.MADV_HUGEPAGE
	}
	if err := syscall.Madvise(buf, advice); err != nil {
		b.Fatal(err)
	}
	for i := range buf {
		buf[i] = byte(i)
	}
	b.Cleanup(func() { syscall.Munmap(buf) })
	return buf
}

// thrashOp is one operation of op on a fresh store of the kind named.
func thrashOp(b *testing.B, store, op string) func() {
	v := make([]byte, 64)
	dst := make([]byte, 64)
	tok := []byte("0123456789abcdef")
	var get, set, lock, unlock func()
	if store == "kv" {
		s := memstore.New(memstore.Options{})
		b.Cleanup(s.Close)
		get, set = func() { s.GetInto("key", dst) }, func() { s.Set("key", v, 0) }
		lock, unlock = func() { s.SetNX("lock", tok, 30*time.Second) }, func() { s.DelIfEq("lock", tok) }
	} else {
		s := benchStore(b)
		get, set = func() { s.GetInto("key", dst) }, func() { s.Set("key", v, 0) }
		lock, unlock = func() { s.SetNX("lock", tok, 30*time.Second) }, func() { s.DelIfEq("lock", tok) }
	}
	set()
	switch op {
	case "get":
		return get
	case "set":
		return set
	}
	return func() { lock(); unlock() }
}
