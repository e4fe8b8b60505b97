// The contract of the batch members, GetMany and SetMany, and the decoder
// of their value records.

package backendtest

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
)

// batchContract: GetMany and SetMany.
var batchContract = []struct {
	name string
	run  func(t *testing.T, b backend.Backend, p string, clock Clock)
}{
	{"GetManySetMany", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		keys := []string{p + "m:a", p + "m:\x00b", p + "m:none", p + "m:empty", p + "m:a"}
		stored, err := b.SetMany(keys[:2], [][]byte{[]byte("alpha"), {0, 'x', 0}}, 0)
		require.NoError(t, err)
		assert.Equal(t, 2, stored)
		stored, err = b.SetMany([]string{p + "m:empty"}, [][]byte{{}}, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, 1, stored)
		dst := make([]byte, 256)
		n, err := b.GetMany(keys, dst)
		require.NoError(t, err)
		values, found := DecodeRecords(t, dst[:n], len(keys))
		assert.Equal(t, []bool{true, true, false, true, true}, found)
		assert.Equal(t, "alpha", string(values[0]))
		assert.Equal(t, []byte{0, 'x', 0}, values[1])
		assert.Equal(t, "", string(values[3]))
		assert.Equal(t, "alpha", string(values[4]), "a key asked twice answers twice")
		ttl, _, _ := b.PTTL(p + "m:empty")
		assert.Greater(t, ttl, 50*time.Second, "the batch's TTL applies to every entry")

		small := make([]byte, n-1)
		need, err := b.GetMany(keys, small)
		require.NoError(t, err)
		assert.Equal(t, n, need, "too small: the length comes back")
		need, err = b.GetMany(keys, nil)
		require.NoError(t, err)
		assert.Equal(t, n, need)
		need, err = b.GetMany(nil, dst)
		require.NoError(t, err)
		assert.Equal(t, 0, need, "an empty batch")

		stored, err = b.SetMany([]string{p + "m:a", p + "m:a"}, [][]byte{[]byte("1"), []byte("2")}, 0)
		require.NoError(t, err)
		assert.Equal(t, 2, stored)
		n, _ = b.GetMany([]string{p + "m:a"}, dst)
		values, _ = DecodeRecords(t, dst[:n], 1)
		assert.Equal(t, "2", string(values[0]), "a key given twice ends with its later value")
	}},
	{"SetManyRefusesABadBatchWhole", func(t *testing.T, b backend.Backend, p string, _ Clock) {
		for name, keys := range map[string][]string{
			"empty key":   {p + "r:1", "", p + "r:3"},
			"long key":    {p + "r:1", strings.Repeat("k", contract.MaxKeyLen+1), p + "r:3"},
			"short count": {p + "r:1", p + "r:2"},
		} {
			values := [][]byte{[]byte("1"), []byte("2"), []byte("3")}
			stored, err := b.SetMany(keys, values, 0)
			assert.ErrorIs(t, err, contract.ErrInvalidArgument, name)
			assert.Equal(t, 0, stored, name)
			for _, k := range []string{p + "r:1", p + "r:2", p + "r:3"} {
				found, _ := b.Exists(k)
				assert.False(t, found, "%s: nothing written (%s)", name, k)
			}
		}
		_, err := b.SetMany([]string{p + "r:1"}, [][]byte{[]byte("1")}, -time.Second)
		assert.ErrorIs(t, err, contract.ErrInvalidArgument, "negative TTL")
	}},
}

// DecodeRecords reads count get_many value records (include/ephpm_kv.h,
// "Batch records") that must fill buf exactly: each key's value, and
// whether it was found.
func DecodeRecords(t testing.TB, buf []byte, count int) ([][]byte, []bool) {
	t.Helper()
	values, found := make([][]byte, count), make([]bool, count)
	for i := 0; i < count; i++ {
		require.GreaterOrEqual(t, len(buf), 4, "record %d", i)
		n := binary.NativeEndian.Uint32(buf)
		buf = buf[4:]
		if n == backend.Missing {
			continue
		}
		require.GreaterOrEqual(t, uint64(len(buf)), uint64(n), "record %d", i)
		values[i], found[i], buf = buf[:n], true, buf[n:]
	}
	require.Empty(t, buf, "records fill the buffer exactly")
	return values, found
}
