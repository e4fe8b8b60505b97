package memstore

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

func stored(s *Store, key string) block {
	sh, h, _ := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.t.get(h, key)
}

func TestCompression(t *testing.T) {
	s, _ := newTestStore(t)
	require.NoError(t, s.Configure(contract.MemoryConfig{Compression: true, CompressionMinSize: 1024}))
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
	require.NoError(t, s.Configure(contract.MemoryConfig{}))
	got, _ = s.Get("big")
	assert.Equal(t, big, got)
	require.NoError(t, s.Set("big2", big, 0))
	assert.False(t, blockFlags(stored(s, "big2"), flagCompressed))
	// A compressed lock token still guards a write.
	require.NoError(t, s.Configure(contract.MemoryConfig{Compression: true}))
	_, err = s.SetNX("lock", big, 0)
	require.NoError(t, err)
	ok, err = s.SetGuarded("data", []byte("x"), 0, "lock", big)
	require.NoError(t, err)
	assert.True(t, ok)
}

// A corrupt compressed value panics where it is decompressed under a
// shard's lock (memory corruption: the bridge turns the panic into
// "outcome unknown"); the lock is released on the panic's way out, so that
// the next calls on the shard still run. DelIfEq, SetGuarded and
// SetFencedToken compare a token, IncrBy reads a counter and the lock steps
// a reader record, each under locks install (or DelIfEq) releases
// explicitly; DelFencedToken compares under deferred ones.
func TestACorruptCompressedValueLeavesItsShardUsable(t *testing.T) {
	token := bytes.Repeat([]byte("token "), 100)
	var rec contract.ReaderRecord
	for i := range 20 {
		rec.Holds = append(rec.Holds, contract.ReadHold{Token: []byte(fmt.Sprintf("reader token %03d", i))})
	}
	for _, tc := range []struct {
		name  string
		value []byte                        // stored compressed at "key" (a fenced grant), then corrupted
		calls []func(s *Store, fence int64) // each panics on it
	}{
		{"a lock token", token, []func(*Store, int64){
			func(s *Store, _ int64) { s.DelIfEq("key", token) },
			func(s *Store, _ int64) { s.SetGuarded("data", []byte("v"), 0, "key", token) },
			func(s *Store, f int64) { s.SetFencedToken("data", []byte("v"), 0, "key", f, token) },
			func(s *Store, f int64) { s.DelFencedToken("data", "key", f, token) },
		}},
		{"a counter", append(bytes.Repeat([]byte("0"), 200), '7'), []func(*Store, int64){
			func(s *Store, _ int64) { s.IncrBy("key", 1, 0) },
		}},
		{"a reader record", rec.AppendTo(nil), []func(*Store, int64){
			func(s *Store, _ int64) { s.LockAttempt("key", []byte("r"), contract.LockShared, time.Minute, 0) },
			func(s *Store, _ int64) {
				s.LockAttempt("key", []byte("w"), contract.LockExclusive, time.Minute, time.Second)
			},
			func(s *Store, _ int64) { s.LockRelease("key", []byte("reader token 000")) },
			func(s *Store, _ int64) { s.LockRefresh("key", []byte("reader token 000"), time.Minute) },
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestStore(t)
			require.NoError(t, s.Configure(contract.MemoryConfig{Compression: true, CompressionMinSize: 64}))
			out, fence, err := s.SetNXFenced("key", tc.value, 0)
			require.NoError(t, err)
			require.Equal(t, contract.Inserted, out)
			b := stored(s, "key")
			require.True(t, blockFlags(b, flagCompressed))
			st := blockStored(b)
			for i := 4; i < len(st); i++ {
				st[i] = 0xff // an lz4 block that cannot decompress to its length
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i, call := range tc.calls {
					assert.NotNil(t, panics(func() { call(s, fence) }), "call %d panics", i)
				}
				assert.True(t, s.Del("key"), "the shard still serves calls")
				n, err := s.IncrBy("key", 1, 0)
				assert.NoError(t, err)
				assert.Equal(t, int64(1), n)
			}()
			select {
			case <-done:
			case <-time.After(hangCatch):
				t.Fatal("the shard's lock was left held by a panicking call")
			}
		})
	}
}

// panics runs f and returns what it panicked with (nil: it returned).
func panics(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}
