package contract

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apply runs d on (value, live) as a store would, ignoring expiry.
func apply(v []byte, live bool, d LockDecision) ([]byte, bool) {
	switch d.Write {
	case LockStore:
		return append([]byte(nil), d.Value...), true
	case LockRemove:
		return nil, false
	}
	return v, live
}

func TestReaderRecordRoundTrips(t *testing.T) {
	r := ReaderRecord{Claim: 7, Holds: []ReadHold{{Token: []byte("a"), Deadline: 5}, {Token: []byte("bb"), Deadline: 0}}}
	got, err := ParseReaderRecord(r.AppendTo(nil))
	require.NoError(t, err)
	assert.Equal(t, r, got)
	assert.True(t, IsReaderRecord(r.AppendTo(nil)))
	assert.False(t, IsReaderRecord([]byte("0123456789abcdef0123456789abcdef")))
	_, err = ParseReaderRecord(r.AppendTo(nil)[:len(readerMagic)+9])
	assert.Error(t, err)
}

func TestReadersShareAndWriterWaits(t *testing.T) {
	var v []byte
	live := false
	d, err := DecideAcquire(v, live, LockShared, []byte("r1"), 100, 0, 1)
	require.NoError(t, err)
	require.True(t, d.Granted)
	assert.Equal(t, WakeOne, d.Wake)
	v, live = apply(v, live, d)
	d, err = DecideAcquire(v, live, LockShared, []byte("r2"), 200, 0, 1)
	require.NoError(t, err)
	require.True(t, d.Granted)
	assert.Equal(t, int64(200), d.ExpireAt)
	v, live = apply(v, live, d)
	m, n := LockHolders(v, live, 1)
	assert.Equal(t, LockShared, m)
	assert.Equal(t, 2, n)

	// A writer is refused and claims; the claim refuses a new reader.
	d, err = DecideAcquire(v, live, LockExclusive, []byte("w"), 0, 50, 1)
	require.NoError(t, err)
	require.False(t, d.Granted)
	require.Equal(t, LockStore, d.Write)
	v, live = apply(v, live, d)
	d, err = DecideAcquire(v, live, LockShared, []byte("r3"), 0, 0, 2)
	require.NoError(t, err)
	assert.False(t, d.Granted)

	// The readers leave; the last leaves the claim alone and wakes all.
	d = DecideRelease(v, live, []byte("r1"), 2)
	require.True(t, d.Granted)
	assert.Equal(t, WakeNone, d.Wake)
	v, live = apply(v, live, d)
	d = DecideRelease(v, live, []byte("r2"), 2)
	require.True(t, d.Granted)
	assert.Equal(t, WakeAll, d.Wake)
	v, live = apply(v, live, d)
	_, n = LockHolders(v, live, 2)
	assert.Equal(t, 0, n, "a claim alone is free")

	// The writer takes it: the value is its token, as set_nx leaves it.
	d, err = DecideAcquire(v, live, LockExclusive, []byte("w"), 0, 50, 3)
	require.NoError(t, err)
	require.True(t, d.Granted)
	v, live = apply(v, live, d)
	assert.Equal(t, []byte("w"), v)
	m, n = LockHolders(v, live, 3)
	assert.Equal(t, LockExclusive, m)
	assert.Equal(t, 1, n)
	d, err = DecideAcquire(v, live, LockShared, []byte("r4"), 0, 0, 3)
	require.NoError(t, err)
	assert.False(t, d.Granted)
	assert.False(t, DecideRelease(v, live, []byte("x"), 3).Granted)
	d = DecideRelease(v, live, []byte("w"), 3)
	require.True(t, d.Granted)
	assert.Equal(t, LockRemove, d.Write)
}

func TestLapsedHoldsAndClaimsCountAsAbsent(t *testing.T) {
	r := ReaderRecord{Claim: 10, Holds: []ReadHold{{Token: []byte("old"), Deadline: 10}}}
	v := r.AppendTo(nil)
	_, n := LockHolders(v, true, 11)
	assert.Equal(t, 0, n)
	d, err := DecideAcquire(v, true, LockShared, []byte("new"), 0, 0, 11)
	require.NoError(t, err)
	assert.True(t, d.Granted)
	assert.False(t, DecideRelease(v, true, []byte("old"), 11).Granted)
	assert.False(t, DecideRefresh(v, true, []byte("old"), 99, 11).Granted)
	d = DecideRefresh(v, true, []byte("old"), 99, 9)
	require.True(t, d.Granted)
	assert.Equal(t, int64(99), d.ExpireAt)
}

func TestSharedAttemptRefusals(t *testing.T) {
	r := ReaderRecord{Holds: []ReadHold{{Token: []byte("t")}}}
	_, err := DecideAcquire(r.AppendTo(nil), true, LockShared, []byte("t"), 0, 0, 1)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	d, err := DecideAcquire([]byte("plain"), true, LockShared, []byte("t"), 0, 0, 1)
	require.NoError(t, err)
	assert.False(t, d.Granted)
	assert.Equal(t, LockKeep, d.Write)
	assert.Error(t, CheckLockToken(nil))
	assert.Error(t, CheckLockToken(make([]byte, 256)))
}
