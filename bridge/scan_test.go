package bridge

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
)

// damaged is a store whose walk went past a damaged part.
type damaged struct{ backend.Memory }

func (damaged) Scan(prefix string, cursor uint64, count int, locksOnly bool) (backend.ScanPage, error) {
	return backend.ScanPage{
		Keys: []backend.KeyInfo{
			{Key: "session:abc", Size: 4, TTL: 1500 * time.Microsecond, Waiters: -1},
			{Key: "rw", Size: 40, TTL: -1, Lock: true, Readers: 3, Waiters: 2, HolderPID: 77},
		},
		Skipped: []string{"shard 3: corrupt"},
		Next:    42,
	}, nil
}

// scan's records: each field where the header puts it, the kinds told by
// backend.KeyInfo.Kind, a TTL rounded up, a damaged part as a SKIPPED
// record; TOO_SMALL with the length needed and no cursor.
func TestScanWritesTheHeadersRecords(t *testing.T) {
	SetBackend(damaged{backend.Memory{Store: store}})
	defer SetBackend(backend.Memory{Store: store})

	need, next, err := scanInto(nil, 0, 10, 0, make([]byte, 10))
	require.NoError(t, err)
	assert.Equal(t, 3*scanRecordHead+len("session:abc")+len("rw")+len("shard 3: corrupt"), need)
	assert.Zero(t, next, "too small: no cursor")

	buf := make([]byte, need)
	n, next, err := scanInto(nil, 0, 10, 0, buf)
	require.NoError(t, err)
	require.Equal(t, need, n)
	assert.Equal(t, uint64(42), next)
	type rec struct {
		kind                             uint32
		size, ttl, holders, waiters, pid int64
		key                              string
	}
	var got []rec
	e := binary.NativeEndian
	for b := buf; len(b) > 0; {
		kl := int(e.Uint32(b))
		r := rec{kind: e.Uint32(b[4:]), key: string(b[scanRecordHead : scanRecordHead+kl])}
		for i, p := range []*int64{&r.size, &r.ttl, &r.holders, &r.waiters, &r.pid} {
			*p = int64(e.Uint64(b[8+8*i:]))
		}
		got = append(got, r)
		b = b[scanRecordHead+kl:]
	}
	assert.Equal(t, []rec{
		{uint32(backend.KindSession), 4, 2, 0, -1, 0, "session:abc"},
		{uint32(backend.KindSharedLock), 40, -1, 3, 2, 77, "rw"},
		{kindSkipped, 0, 0, 0, 0, 0, "shard 3: corrupt"},
	}, got)

	_, _, err = scanInto(nil, 0, 0, 0, buf)
	assert.ErrorContains(t, err, "count 0")
	_, _, err = scanInto(nil, 0, 10, 2, buf)
	assert.ErrorContains(t, err, "flags")
	_, _, err = scanInto(make([]byte, 4097), 0, 10, 0, buf)
	assert.ErrorContains(t, err, "longer than a key")
}
