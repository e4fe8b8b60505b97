package kv

import (
	"bytes"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func stored(s *Store, key string) block {
	sh, h, _ := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.t.get(h, key)
}

func TestCompression(t *testing.T) {
	s, _ := newTestStore(t)
	require.NoError(t, s.Configure(MemoryConfig{Compression: true, CompressionMinSize: 1024}))
	big := bytes.Repeat([]byte("compressible "), 400)
	small := bytes.Repeat([]byte("s"), 1000)
	noise := make([]byte, 4096)
	rand.Read(noise)

	require.NoError(t, s.Set("big", big, 0))
	require.NoError(t, s.Set("small", small, 0))
	require.NoError(t, s.Set("noise", noise, 0))
	assert.True(t, blockFlags(stored(s, "big"), flagCompressed))
	assert.False(t, blockFlags(stored(s, "small"), flagCompressed), "under the minimum size")
	assert.False(t, blockFlags(stored(s, "noise"), flagCompressed), "not smaller compressed")
	assert.Less(t, blockSize(stored(s, "big")), len(big)/4, "stored compressed")

	got, ok := s.Get("big")
	require.True(t, ok)
	assert.Equal(t, big, got)

	dst := make([]byte, len(big))
	n, ok := s.GetInto("big", dst[:10])
	assert.True(t, ok)
	assert.Equal(t, len(big), n, "too small: the length comes back")
	n, _ = s.GetInto("big", dst)
	assert.Equal(t, big, dst[:n])

	// Compare-and-delete compares against the logical value.
	assert.False(t, s.DelIfEq("big", big[:len(big)-1]))
	ok, err := s.ExpireIfEq("big", big, time.Hour)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.True(t, s.DelIfEq("big", big))

	// Turning compression off breaks nothing already stored.
	require.NoError(t, s.Set("big", big, 0))
	require.NoError(t, s.Configure(MemoryConfig{}))
	got, _ = s.Get("big")
	assert.Equal(t, big, got)
	require.NoError(t, s.Set("big2", big, 0))
	assert.False(t, blockFlags(stored(s, "big2"), flagCompressed))
	// A compressed lock token still guards a write.
	require.NoError(t, s.Configure(MemoryConfig{Compression: true}))
	_, err = s.SetNX("lock", big, 0)
	require.NoError(t, err)
	ok, err = s.SetGuarded("data", []byte("x"), 0, "lock", big)
	require.NoError(t, err)
	assert.True(t, ok)
}

// A corrupt compressed value panics where it is compared (memory
// corruption: the bridge turns the panic into "outcome unknown"); the
// shard's lock is released on the panic's way out, so that the next calls
// on the shard still run. DelIfEq and SetGuarded compare under locks they
// release explicitly.
func TestACorruptCompressedValueLeavesItsShardUsable(t *testing.T) {
	s, _ := newTestStore(t)
	require.NoError(t, s.Configure(MemoryConfig{Compression: true, CompressionMinSize: 64}))
	token := bytes.Repeat([]byte("token "), 100)
	require.NoError(t, s.Set("lock", token, 0))
	b := stored(s, "lock")
	require.True(t, blockFlags(b, flagCompressed))
	st := blockStored(b)
	for i := 4; i < len(st); i++ {
		st[i] = 0xff // an lz4 block that cannot decompress to its length
	}
	panics := func(f func()) (r any) {
		defer func() { r = recover() }()
		f()
		return nil
	}
	assert.NotNil(t, panics(func() { s.DelIfEq("lock", token) }), "DelIfEq")
	assert.NotNil(t, panics(func() { s.SetGuarded("data", []byte("v"), 0, "lock", token) }), "SetGuarded")
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.True(t, s.Del("lock"), "the shard still serves calls")
		_, err := s.SetGuarded("data", []byte("v"), 0, "lock", token)
		assert.NoError(t, err)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the shard's lock was left held by the panicking call")
	}
}
