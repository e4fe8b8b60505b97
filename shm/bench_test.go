package shm

import (
	"fmt"
	"testing"
	"time"

	"github.com/ephpm/ephpm/kv"
)

func benchStore(b *testing.B) *Store {
	name := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	s, err := Open(name, Options{Memory: kv.MemoryConfig{Limit: 64 << 20}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close(); removeSegment(name) })
	return s
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
