package shm

import (
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/sessionkeys"
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
		h := unseededHash(sid) ^ sessionSalts[contract.KindSession]
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

func openSessionsIn(t *testing.T, dir, name string, cfg contract.MemoryConfig) *Store {
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
	a := openSessionsIn(t, dir, "a", contract.MemoryConfig{Limit: 4 << 20})
	b := openSessionsIn(t, dir, "b", contract.MemoryConfig{Limit: 4 << 20})
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
					sh, h, tag := a.locate(sessionkeys.DataKey(sid))
					perShard[sh.i]++
					homes[[2]int{sh.i, sh.home(tag)}] = true
					if _, hb, _ := b.locate(sessionkeys.DataKey(sid)); hb != h {
						differ++
					}
				}
				k := len(aim.sids)
				// Aimed ids spread as random ones do: a shard holds about k/4.
				// The bound is 3k/4, not k/2: a fair spread of the chain's 32
				// ids puts 16 in some shard in about 1 run of 40 (binomial,
				// over the three id lengths), 24 in fewer than 1 in 10^7; an
				// aim that worked puts all k in one.
				for i, c := range perShard {
					assert.Less(t, c, k*3/4, "%s: shard %d holds %d of %d aimed ids", aim.name, i, c, k)
				}
				assert.Greater(t, len(homes), k*9/10, "%s: %d distinct probe starts for %d aimed ids", aim.name, len(homes), k)
				assert.Greater(t, differ, k*9/10, "%s: two segments hash alike", aim.name)
			}
		})
	}
}

// TestADamagedSeedIsRefusedNotUsed: a stray write changes the hash seed
// in the header while process A holds a lock. A process that opens the
// segment afterwards must not hash by the damaged seed (every key would
// land elsewhere: misses, duplicate keys, A's lock granted a second
// time): the open is refused as corrupt, and A, whose copy of the seed
// no longer matches the header, refuses every call from its next check.
func TestADamagedSeedIsRefusedNotUsed(t *testing.T) {
	name := testName(t)
	a := openRemovable(t, name)
	out, err := a.SetNX("lock", []byte("a"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)

	atomic.AddUint64(a.g.u64(hSeed+8), 1<<17) // one bit of the second word

	b, err := Open(name, Options{})
	if err == nil {
		defer b.Close()
		out, _ := b.SetNX("lock", []byte("b"), time.Minute)
		t.Fatalf("a segment with a damaged seed was opened; its SetNX of the held lock: %v", out)
	}
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), Path("", name))
	require.Contains(t, err.Error(), "stop the processes using it and remove the file")

	// A: refused from Revalidate on, and by every call after it.
	err = a.Revalidate()
	require.ErrorIs(t, err, ErrCorrupt)
	require.False(t, errors.Is(err, contract.ErrNothingDone), "%v", err)
	_, _, err = a.GetInto("lock", make([]byte, 8))
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = a.SetNX("other", []byte("a"), time.Minute)
	require.ErrorIs(t, err, ErrCorrupt)
}

// TestADamagedSeedIsFoundByThePeriodicCheck: with no host calling
// Revalidate, the check that comes due every checkInterval compares the
// header's seed with this process's copy too.
func TestADamagedSeedIsFoundByThePeriodicCheck(t *testing.T) {
	a := openRemovable(t, testName(t))
	require.NoError(t, a.Set("k", []byte("v"), 0))
	atomic.AddUint64(a.g.u64(hSeed+24), 1<<63)
	a.check.Store(checkDue) // as the timer marks it
	_, _, err := a.GetInto("k", make([]byte, 8))
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, a.Set("k", []byte("w"), 0), ErrCorrupt)
}

// TestADamagedSeedCheckWordIsRefused: the check word itself damaged is a
// damaged header as well: which of the five words changed is unknowable.
func TestADamagedSeedCheckWordIsRefused(t *testing.T) {
	name := testName(t)
	a := openRemovable(t, name)
	atomic.AddUint64(a.g.u64(hSeedCheck), 1)
	_, err := Open(name, Options{})
	require.ErrorIs(t, err, ErrCorrupt)
}

// TestTheSeedCheckWordFindsEveryOneWordChange: seedCheck is a chain of
// bijections, so a change confined to one of the four words (any number
// of its bits) always changes the check word.
func TestTheSeedCheckWordFindsEveryOneWordChange(t *testing.T) {
	k := *randomSeed(t)
	want := seedCheck(k)
	for i := range k {
		for bit := 0; bit < 64; bit++ {
			d := k
			d[i] ^= 1 << bit
			require.NotEqual(t, want, seedCheck(d), "word %d bit %d", i, bit)
		}
	}
}
