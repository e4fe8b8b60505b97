package bridge

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

// restoreSettings puts the in-process store's memory setting and the near
// cache back as they were when the test ends.
func restoreSettings(t *testing.T) {
	cfg, n := store.MemoryConfig(), near
	t.Cleanup(func() {
		require.NoError(t, store.Configure(cfg))
		near = n
	})
}

func TestEverySettingIsARowOfTheTable(t *testing.T) {
	restoreSettings(t)
	for _, c := range []struct{ name, value string }{
		{"memory_limit", "64M"}, {"session_memory_limit", "1k"}, {"eviction", "allkeys-lru"},
		{"compression", "lz4"}, {"compression_min_size", "2048"}, {"near_cache_prefixes", "a:, b:"},
		{"near_cache_staleness_ms", "250"}, {"near_cache_size", "1G"}, {"sapi", "cli"},
	} {
		require.NoError(t, configure(c.name, c.value), c.name)
	}
	cfg := store.MemoryConfig()
	assert.Equal(t, contract.MemoryConfig{Limit: 64 << 20, SessionLimit: 1 << 10, Policy: contract.AllKeysLRU,
		Compression: true, CompressionMinSize: 2048}, cfg)
	assert.Equal(t, []string{"a:", "b:"}, near.Prefixes)
	assert.Equal(t, 250*time.Millisecond, near.Staleness)
	assert.Equal(t, int64(1<<30), near.MaxBytes)
}

func TestARefusedSettingChangesNothing(t *testing.T) {
	restoreSettings(t)
	require.NoError(t, configure("memory_limit", "1048576"))
	assert.Equal(t, int64(512<<10), store.Stats().SessionLimit, "0: half of memory_limit")
	require.NoError(t, configure("session_memory_limit", "262144"))
	before := store.MemoryConfig()
	for _, c := range []struct{ name, value string }{
		{"session_memory_limit", "-1"}, {"session_memory_limit", "x"}, {"session_memory_limit", "1048576"},
		{"memory_limit", "1T"}, {"memory_limit", "9223372036854775807K"}, {"eviction", "lfu"},
		{"eviction", "ALLKEYS-LRU"}, {"compression", "zstd"}, {"compression", "LZ4"},
		{"compression_min_size", "2G"}, {"near_cache_size", "-1"}, {"bogus", "1"}, {"Memory_limit", "1"},
		{"backend", "shm://bad/name"},
	} {
		assert.ErrorIs(t, configure(c.name, c.value), contract.ErrInvalidArgument, "%s=%s", c.name, c.value)
	}
	assert.Equal(t, before, store.MemoryConfig())
	assert.Equal(t, int64(256<<10), store.Stats().SessionLimit)
}

func TestParseSizeReadsPHPQuantities(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "64M": 64 << 20, " 2k ": 2048, "1G": 1 << 30, "7": 7, "3m": 3 << 20} {
		got, err := parseSize(in, 1<<40)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "M", "-1", "1.5M", "0x10", "2T", "1025G"} {
		_, err := parseSize(in, 1<<40)
		assert.ErrorIs(t, err, contract.ErrInvalidArgument, in)
	}
}

// A segment that "auto" chose but cannot serve with these settings is an
// error the extension does not mistake for a library that knows no "auto":
// never E_INVALID.
func TestAutoFailureIsNotABadValue(t *testing.T) {
	restoreSettings(t)
	require.NoError(t, configure("sapi", "fpm-fcgi"))
	name, _, _ := autoSegment("fpm-fcgi")
	path := "/dev/shm/ephpm-" + name + "." + strconv.Itoa(os.Geteuid())
	os.Remove(path)
	t.Cleanup(func() {
		require.NoError(t, configure("backend", "memory"))
		os.Remove(path)
	})
	require.NoError(t, configure("memory_limit", "1M"))
	require.NoError(t, configure("backend", "auto"))
	assert.Contains(t, *chosen.Load(), "shm "+path+" (default: php-fpm worker)")
	require.NoError(t, configure("backend", "memory"))
	require.NoError(t, configure("memory_limit", "2M"))
	err := configure("backend", "auto")
	require.Error(t, err)
	assert.NotErrorIs(t, err, contract.ErrInvalidArgument)
	assert.ErrorContains(t, err, "memory_limit")
}
