package shm

import (
	"fmt"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShortKeyHashSpreads: keys of up to 16 bytes, which hashKey mixes
// itself, spread evenly over 32 shards, over fence buckets (the low 14
// bits) and over index tags (the high half), and no two of a million
// share a 64-bit hash; a byte changed anywhere, or a length changed,
// changes it.
func TestShortKeyHashSpreads(t *testing.T) {
	const n = 1 << 20
	seen := make(map[uint64]string, n)
	var shards [32]int
	buckets := make([]int, fenceBuckets)
	tags := make(map[uint32]struct{}, n)
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("k:%d", i) // 3-9 bytes: every length class but 10-16
		if i%2 == 1 {
			k = fmt.Sprintf("bench:key:%06d", i) // 16 bytes
		}
		h := hashKey(k)
		if other, dup := seen[h]; dup {
			t.Fatalf("%q and %q share hash %x", k, other, h)
		}
		seen[h] = k
		shards[h&31]++
		buckets[h&(fenceBuckets-1)]++
		tags[tagOfHash(h)] = struct{}{}
	}
	for i, c := range shards {
		assert.InDelta(t, n/32, c, n/32*0.03, "shard %d", i)
	}
	lo, hi := n, 0
	for _, c := range buckets {
		lo, hi = min(lo, c), max(hi, c)
	}
	assert.Greater(t, lo, n/fenceBuckets/3, "the emptiest fence bucket")
	assert.Less(t, hi, n/fenceBuckets*3, "the fullest fence bucket")
	assert.Greater(t, len(tags), n-n/1000, "distinct tags")

	base := "0123456789abcdef"
	for l := 0; l <= len(base); l++ {
		k := base[:l]
		for i := 0; i < l; i++ {
			b := []byte(k)
			b[i] ^= 1
			require.NotEqual(t, hashKey(k), hashKey(string(b)), "length %d, byte %d flipped", l, i)
		}
		if l > 0 {
			require.NotEqual(t, hashKey(k), hashKey(k[:l-1]), "length %d against %d", l, l-1)
		}
	}
	// "\x00" and "" differ by length only; 17 bytes and more are xxhash.
	assert.NotEqual(t, hashKey(""), hashKey("\x00"))
	assert.Equal(t, xxhash.Sum64String(base+"g"), hashKey(base+"g"))
}

// BenchmarkHashKey: a 7-byte key (PHP's bench keys) and a 40-byte one.
func BenchmarkHashKey(b *testing.B) {
	for _, k := range []string{"bench:l", "sess_0123456789abcdef0123456789abcdef01"} {
		b.Run(fmt.Sprint(len(k)), func(b *testing.B) {
			var s uint64
			for b.Loop() {
				s += hashKey(k)
			}
			benchSink = s
		})
	}
}

var benchSink uint64
