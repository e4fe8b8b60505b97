package shm

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randomSeed is a seed as initSegment draws one.
func randomSeed(t testing.TB) *hashSeed {
	var b [32]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	var k hashSeed
	for i := range k {
		k[i] = binary.LittleEndian.Uint64(b[i*8:])
	}
	return &k
}

// TestKeyHashSpreads: keys of up to 16 bytes (which the hash mixes with no
// loop) and longer ones (session ids, folded 16 and 48 bytes at a time)
// spread evenly over 32 shards, over fence buckets (the low 14 bits) and
// over index tags (the high half), and no two of a million share a 64-bit
// hash; a byte changed anywhere, or a length changed, changes it; and
// another seed gives another hash.
func TestKeyHashSpreads(t *testing.T) {
	k := randomSeed(t)
	const n = 1 << 20
	seen := make(map[uint64]string, n)
	var shards [32]int
	buckets := make([]int, fenceBuckets)
	tags := make(map[uint32]struct{}, n)
	for i := 0; i < n; i++ {
		var key string
		switch i % 4 {
		case 0:
			key = fmt.Sprintf("k:%d", i) // 3-9 bytes
		case 1:
			key = fmt.Sprintf("bench:key:%06d", i) // 16 bytes
		case 2:
			key = fmt.Sprintf("%032x", i) // a session id of PHP's default length
		default:
			key = fmt.Sprintf("sess_%0*d", 17+i%80, i) // 22-101 bytes: every tail of the 48-byte loop
		}
		h := k.hash(key)
		if other, dup := seen[h]; dup {
			t.Fatalf("%q and %q share hash %x", key, other, h)
		}
		seen[h] = key
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

	base := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"
	for l := 0; l <= len(base); l++ {
		key := base[:l]
		for i := 0; i < l; i++ {
			b := []byte(key)
			b[i] ^= 1
			require.NotEqual(t, k.hash(key), k.hash(string(b)), "length %d, byte %d flipped", l, i)
		}
		if l > 0 {
			require.NotEqual(t, k.hash(key), k.hash(key[:l-1]), "length %d against %d", l, l-1)
		}
	}
	// "\x00" and "" differ by length only.
	assert.NotEqual(t, k.hash(""), k.hash("\x00"))

	other := randomSeed(t)
	same := 0
	for i := 0; i < 1000; i++ {
		key := fmt.Sprintf("%0*d", 1+i%64, i)
		if k.hash(key)&31 == other.hash(key)&31 {
			same++
		}
	}
	assert.InDelta(t, 1000/32, same, 25, "keys in the same shard under two seeds")
}

// BenchmarkHashKey: a 7-byte key (PHP's bench keys) and a 39-byte one (a
// session key).
func BenchmarkHashKey(b *testing.B) {
	k := randomSeed(b)
	for _, key := range []string{"bench:l", "sess_0123456789abcdef0123456789abcdef01"} {
		b.Run(fmt.Sprint(len(key)), func(b *testing.B) {
			var s uint64
			for b.Loop() {
				s += k.hash(key)
			}
			benchSink = s
		})
	}
}

var benchSink uint64
