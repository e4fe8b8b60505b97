package redisstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/internal/redistest"
)

func TestNearCache(t *testing.T) {
	srv := redistest.Start(t)
	const staleness = 2 * time.Second
	s, err := Open("redis://"+srv.Addr, Options{Near: NearCache{Prefixes: []string{"cfg:", "session:"}, Staleness: staleness, MaxBytes: 1 << 20},
		Colocated: testOptions.Colocated, Pinned: testOptions.Pinned})
	require.NoError(t, err)
	defer s.Close()
	other, err := Open("redis://"+srv.Addr, testOptions) // another process, as it were
	require.NoError(t, err)
	defer other.Close()

	read := func(st *Store, key string) string {
		dst := make([]byte, 64)
		n, found, err := st.GetInto(key, dst)
		require.NoError(t, err)
		if !found {
			return "<none>"
		}
		return string(dst[:n])
	}
	require.NoError(t, s.Set("cfg:a", []byte("v1"), 0))
	require.NoError(t, s.Set("session:x", []byte("s1"), 0))
	require.NoError(t, s.Set("plain", []byte("p1"), 0))
	fetched := time.Now() // before cfg:a is fetched into the near cache
	read(s, "cfg:a")
	read(s, "session:x")
	read(s, "plain")
	require.Eventually(t, func() bool { _, ok := s.near.get("cfg:a"); return ok }, hangCatch, time.Millisecond,
		"ristretto applies sets asynchronously")

	require.NoError(t, other.Set("cfg:a", []byte("v2"), 0))
	require.NoError(t, other.Set("session:x", []byte("s2"), 0))
	require.NoError(t, other.Set("plain", []byte("p2"), 0))
	// Within the staleness bound, the near copy: asserted unless the host
	// took the whole bound to get here (then either copy is right).
	if got := read(s, "cfg:a"); time.Since(fetched) < staleness {
		assert.Equal(t, "v1", got, "served from the near cache within the staleness bound")
	}
	assert.Equal(t, "s2", read(s, "session:x"), "session keys are never cached")
	assert.Equal(t, "p2", read(s, "plain"), "keys outside the prefixes are never cached")

	require.Eventually(t, func() bool { return read(s, "cfg:a") == "v2" }, hangCatch, 10*time.Millisecond,
		"fresh again once the staleness bound passed")

	require.NoError(t, s.Set("cfg:a", []byte("v3"), 0)) // a write through this process
	assert.Equal(t, "v3", read(s, "cfg:a"), "invalidated by a write through this process")
}
