package shm

import (
	"fmt"
	"math/bits"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/kv"
	"github.com/ephpm/ephpm/session"
)

// Chosen keys (issue 26, item 4): PHP takes a session id from the cookie,
// so a client chooses the keys of its sessions. The key hash is seeded
// per segment, so nobody who cannot read the file can compute keys that
// meet in one shard or one index chain (sessionshare_test.go: what one
// who can read it can do).

// unseededHash is the key hash of layout version 7 and before, which
// anyone could compute: xxhash for a key of more than 16 bytes, else a
// mix with fixed constants.
func unseededHash(key string) uint64 {
	n := len(key)
	if n > 16 {
		return xxhash.Sum64String(key)
	}
	var a, b uint64
	switch {
	case n >= 8:
		a, b = load64(key, 0), load64(key, n-8)
	case n >= 4:
		a, b = uint64(load32(key, 0)), uint64(load32(key, n-4))
	case n > 0:
		a = uint64(key[0])<<16 | uint64(key[n>>1])<<8 | uint64(key[n-1])
	}
	m := func(a, b uint64) uint64 { hi, lo := bits.Mul64(a, b); return hi ^ lo }
	return m(m(a^0xa0761d6478bd642f, b^0xe7037ed1a0b428db)^0x8ebc6af09c88c6e3, uint64(n)^0x589965cc75374cc3)
}

// aimedSids returns n session ids of sidLen characters whose session data
// keys, under the unseeded hash, all land in shard 0 of a segment of
// shards shards, and, with slots nonzero, all start their probe at one
// slot of an index of slots slots: the flood a client could compute.
func aimedSids(n, sidLen, shards, slots int) []string {
	var sids []string
	home := -1
	for i := 0; len(sids) < n; i++ {
		sid := fmt.Sprintf("%0*x", sidLen, i)
		h := unseededHash(sid) ^ sessionSalts[kv.KindSession]
		if h&uint64(shards-1) != 0 {
			continue
		}
		if slots != 0 {
			hm := int(tagOfHash(h)) & (slots - 1)
			if home >= 0 && hm != home {
				continue
			}
			home = hm
		}
		sids = append(sids, sid)
	}
	return sids
}

func openSessionsIn(t *testing.T, dir, name string, cfg kv.MemoryConfig) *Store {
	t.Helper()
	opts := sessionOptions(cfg)
	opts.Dir = dir
	s, err := Open(name, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := s.Check(); err != nil {
			t.Errorf("integrity: %v", err)
		}
		s.Close()
	})
	return s
}

// TestKeysAimedByTheUnseededHashSpread: session ids that the unseeded hash
// puts in one shard, or in one index chain, spread over a fresh segment's
// shards and slots, short ids and PHP's 32-character ones alike; and two
// segments hash the same key differently (each has its own seed).
func TestKeysAimedByTheUnseededHashSpread(t *testing.T) {
	dir := t.TempDir()
	a := openSessionsIn(t, dir, "a", kv.MemoryConfig{Limit: 4 << 20})
	b := openSessionsIn(t, dir, "b", kv.MemoryConfig{Limit: 4 << 20})
	shards, slots := len(a.shards), a.g.indexSlots
	require.Equal(t, 4, shards)
	for _, sidLen := range []int{8, 32, 60} {
		t.Run(fmt.Sprint(sidLen), func(t *testing.T) {
			const n = 128
			for _, aim := range []struct {
				name string
				sids []string
			}{{"shard", aimedSids(n, sidLen, shards, 0)}, {"chain", aimedSids(n/4, sidLen, shards, slots)}} {
				perShard := make([]int, shards)
				homes := map[[2]int]bool{}
				differ := 0
				for _, sid := range aim.sids {
					sh, h, tag := a.locate(session.DataKey(sid))
					perShard[sh.i]++
					homes[[2]int{sh.i, sh.home(tag)}] = true
					if _, hb, _ := b.locate(session.DataKey(sid)); hb != h {
						differ++
					}
				}
				k := len(aim.sids)
				for i, c := range perShard {
					assert.Less(t, c, k/2, "%s: shard %d holds %d of %d aimed ids", aim.name, i, c, k)
				}
				assert.Greater(t, len(homes), k*9/10, "%s: %d distinct probe starts for %d aimed ids", aim.name, len(homes), k)
				assert.Greater(t, differ, k*9/10, "%s: two segments hash alike", aim.name)
			}
		})
	}
}
