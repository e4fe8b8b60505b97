package backend_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/memstore"
)

// A batch that cannot store everything says which key failed: the entries
// before it are stored, it keeps its old value, and nothing after it is
// written.
func TestSetManyStopsAtTheFirstKeyThatDoesNotFit(t *testing.T) {
	s := memstore.New(memstore.Options{})
	defer s.Close()
	m := backend.Memory{Store: s}
	require.NoError(t, s.Configure(contract.MemoryConfig{Limit: 1 << 20}))
	require.NoError(t, s.Set("big", []byte("old"), 0))
	keys := []string{"a", "big", "c"}
	values := [][]byte{[]byte("1"), make([]byte, 2<<20), []byte("3")}
	stored, err := m.SetMany(keys, values, 0)
	assert.ErrorIs(t, err, contract.ErrNoMemory)
	assert.ErrorContains(t, err, `key "big"`)
	assert.Equal(t, 1, stored)
	v, _ := s.Get("a")
	assert.Equal(t, "1", string(v))
	v, _ = s.Get("big")
	assert.Equal(t, "old", string(v), "the old value stays")
	assert.False(t, s.Exists("c"), "nothing after the failure is written")
}

// get_many's values are the logical ones: a compressed entry reads back
// decompressed.
func TestGetManyDecompresses(t *testing.T) {
	s := memstore.New(memstore.Options{})
	defer s.Close()
	m := backend.Memory{Store: s}
	require.NoError(t, s.Configure(contract.MemoryConfig{Compression: true, CompressionMinSize: 64}))
	big := []byte(strings.Repeat("compressible ", 1000))
	_, err := m.SetMany([]string{"z"}, [][]byte{big}, 0)
	require.NoError(t, err)
	require.Less(t, s.Stats().BytesUsed, int64(len(big)), "stored compressed")
	dst := make([]byte, len(big)+4)
	n, err := m.GetMany([]string{"z"}, dst)
	require.NoError(t, err)
	values, found := backendtest.DecodeRecords(t, dst[:n], 1)
	assert.True(t, found[0])
	assert.Equal(t, big, values[0])
}
