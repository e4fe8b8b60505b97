package shm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/kv"
)

func TestIndexChurnKeepsEveryLiveKey(t *testing.T) {
	// One shard of 8192 slots: churning distinct keys fills it with
	// tombstones, which compaction must clear without losing a key.
	s := openTest(t, kv.MemoryConfig{Limit: MinMemoryLimit})
	require.Equal(t, 1, s.g.shards)
	const live = 2000
	for i := 0; i < 40000; i++ {
		require.NoError(t, s.Set(fmt.Sprintf("key:%d", i), []byte("v"), 0), "set %d", i)
		if i >= live {
			// Keys hash all over the index: their tombstones land inside runs.
			j := i - live
			ok, err := s.Del(fmt.Sprintf("key:%d", j))
			require.NoError(t, err)
			require.True(t, ok, "del %d", j)
		}
		if i%10000 == 0 {
			require.NoError(t, s.Check())
		}
	}
	for i := 40000 - live; i < 40000; i++ {
		_, found := get(t, s, fmt.Sprintf("key:%d", i))
		require.True(t, found, "key:%d lost", i)
	}
	st, _ := s.Stats()
	assert.Equal(t, int64(live), st.Keys)
}
