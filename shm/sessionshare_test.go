package shm

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/sessionkeys"
)

// A shard's share of the session budget (issue 26, item 4): even one who
// knows the segment's hash (who can read its file) and chooses session
// ids that all land in one shard fills only that shard's share of the
// budget, and locks and cache writes there still have room.

// sidsInShard returns n session ids whose keys land in shard 0 of s: an
// adversary who knows the segment's hash (one who can read the file).
func sidsInShard(s *Store, n int) []string {
	var sids []string
	for i := 0; len(sids) < n; i++ {
		sid := fmt.Sprintf("flood%027d", i)
		if sh, _, _ := s.locate(sessionkeys.DataKey(sid)); sh.i == 0 {
			sids = append(sids, sid)
		}
	}
	return sids
}

func keysInShard(s *Store, prefix string, n int) []string {
	var keys []string
	for i := 0; len(keys) < n; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if sh, _, _ := s.locate(k); sh.i == 0 {
			keys = append(keys, k)
		}
	}
	return keys
}

// evenShare is the share of the session budget one shard may hold, as
// docs/design.md states it: a quarter more than an even split, at most
// the budget.
func evenShare(s *Store) int64 {
	budget := atomic.LoadInt64(s.g.i64(hSessLimit))
	return min(budget, budget*5/4/int64(len(s.shards)))
}

// TestASessionFloodAimedAtOneShardLeavesItsLocksRoom: a flood of session
// visits aimed at one shard by one who knows the hash (twice that shard's
// heap of data, every session seen once) leaves that shard's session data
// within its share of the budget, and 200 locks and 100 cache writes of 1
// KiB in that shard all succeed, under either eviction policy. Before the
// share, the flood filled the shard's heap with sessions, which only
// session writes may evict, and 4 of 205 such writes succeeded.
func TestASessionFloodAimedAtOneShardLeavesItsLocksRoom(t *testing.T) {
	for _, policy := range []contract.Policy{contract.AllKeysLRU, contract.NoEviction} {
		t.Run(fmt.Sprint(policy), func(t *testing.T) {
			s := openSessionsIn(t, t.TempDir(), "flood", contract.MemoryConfig{Limit: 4 << 20, Policy: policy})
			data := bytes.Repeat([]byte("d"), 1000)
			sids := sidsInShard(s, int(2*s.g.heapSize/int64(len(data))))
			refused := 0
			for _, sid := range sids {
				lock, tok := sessionkeys.LockKey(sid), []byte("tok-"+sid)
				out, err := s.SetNX(lock, tok, 30*time.Second)
				require.NoError(t, err)
				require.Equal(t, contract.Inserted, out)
				ok, err := backend.SetGuarded(s, sessionkeys.DataKey(sid), data, time.Hour, lock, tok)
				if err != nil {
					require.ErrorIs(t, err, contract.ErrNoMemory)
					refused++
				} else {
					require.True(t, ok)
				}
				_, err = s.DelIfEq(lock, tok)
				require.NoError(t, err)
			}
			sh := &s.shards[0]
			used := atomic.LoadInt64(sh.sessUsed())
			t.Logf("%d session writes refused; shard 0 holds %d bytes of session data, share %d, heap %d",
				refused, used, evenShare(s), s.g.heapSize)
			assert.LessOrEqual(t, used, evenShare(s), "shard 0's session data is within its share")
			st, err := s.Stats()
			require.NoError(t, err)
			assert.LessOrEqual(t, st.SessionBytes, st.SessionLimit)

			var failed []string
			for _, k := range keysInShard(s, "lock:", 200) {
				if out, err := s.SetNX(k, []byte("0123456789abcdef0123456789abcdef"), time.Minute); err != nil || out != contract.Inserted {
					failed = append(failed, fmt.Sprintf("%s: %v %v", k, out, err))
				}
			}
			for _, k := range keysInShard(s, "cache:", 100) {
				if err := s.Set(k, data, time.Hour); err != nil {
					failed = append(failed, fmt.Sprintf("%s: %v", k, err))
				}
			}
			assert.Empty(t, failed[:min(len(failed), 5)], "%d of 300 lock and cache writes in the flooded shard failed", len(failed))
		})
	}
}

// TestASessionLargerThanItsShareIsRefused: a session whose data alone is
// more than one shard's share of the budget is refused with an error that
// names the share, and evicts nothing for it; one within the share is
// written.
func TestASessionLargerThanItsShareIsRefused(t *testing.T) {
	s := openSessionsIn(t, t.TempDir(), "share", contract.MemoryConfig{Limit: 4 << 20, Policy: contract.AllKeysLRU})
	share := evenShare(s)
	require.LessOrEqual(t, share, s.g.heapSize/2, "a session over the share fits a shard's heap")
	sids := sidsInShard(s, 2)
	require.NoError(t, s.Set(sessionkeys.DataKey(sids[0]), []byte("small"), time.Hour))
	err := s.Set(sessionkeys.DataKey(sids[1]), make([]byte, share+1), time.Hour)
	require.ErrorIs(t, err, contract.ErrNoMemory)
	assert.Contains(t, err.Error(), "share")
	assert.True(t, has(t, s, sessionkeys.DataKey(sids[0])), "the refused write evicted another session")
	require.NoError(t, s.Set(sessionkeys.DataKey(sids[1]), make([]byte, share/2), time.Hour))
}
