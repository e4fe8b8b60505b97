package bridge

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/sessionkeys"
)

// The scan member: a page of the backend's walk (backend.Scanner) written
// as the header's scan records.

// scanRecordHead is EPHPM_KV_SCAN_RECORD_HEAD: key_len, kind, then five
// int64s.
const scanRecordHead = 48

// scanMaxCount is EPHPM_KV_SCAN_MAX_COUNT.
const scanMaxCount = 100000

// scanLocks is EPHPM_KV_SCAN_LOCKS.
const scanLocks = 1

// kindSkipped is EPHPM_KV_SCAN_SKIPPED: a record that names a part of the
// store the walk left out.
const kindSkipped = 4

// scanInto is scan: the page at cursor of the entries under prefix, as
// records in dst if they fit; it returns their length either way (need >
// len(dst): dst holds nothing usable) and the next page's cursor.
func scanInto(prefix []byte, cursor uint64, count int, flags int32, dst []byte) (need int, next uint64, err error) {
	switch {
	case len(prefix) > contract.MaxKeyLen:
		return 0, 0, fmt.Errorf("%w: a prefix of %d bytes is longer than a key (%d)", contract.ErrInvalidArgument, len(prefix), contract.MaxKeyLen)
	case count < 1 || count > scanMaxCount:
		return 0, 0, fmt.Errorf("%w: count %d is outside 1..%d", contract.ErrInvalidArgument, count, scanMaxCount)
	case flags&^scanLocks != 0:
		return 0, 0, fmt.Errorf("%w: scan flags %#x: only EPHPM_KV_SCAN_LOCKS (1) is one", contract.ErrInvalidArgument, flags)
	}
	page, err := current().Scan(asString(prefix), cursor, count, flags&scanLocks != 0)
	if err != nil {
		return 0, 0, err
	}
	for _, k := range page.Keys {
		need += scanRecordHead + len(k.Key)
	}
	for _, why := range page.Skipped {
		need += scanRecordHead + len(why)
	}
	if need > len(dst) {
		return need, 0, nil
	}
	at := 0
	for _, k := range page.Keys {
		at += putScanRecord(dst[at:], k.Key, uint32(k.Kind(sessionkeys.DataPrefix)), k.Size, ttlMillis(k.TTL), int64(k.Holders()), int64(k.Waiters), int64(k.HolderPID))
	}
	for _, why := range page.Skipped {
		at += putScanRecord(dst[at:], why, kindSkipped, 0, 0, 0, 0, 0)
	}
	return need, page.Next, nil
}

// putScanRecord writes one record at the start of dst and returns its
// length.
func putScanRecord(dst []byte, key string, kind uint32, size, ttl, holders, waiters, pid int64) int {
	e := binary.NativeEndian
	e.PutUint32(dst, uint32(len(key)))
	e.PutUint32(dst[4:], kind)
	for i, v := range [...]int64{size, ttl, holders, waiters, pid} {
		e.PutUint64(dst[8+8*i:], uint64(v))
	}
	return scanRecordHead + copy(dst[scanRecordHead:], key)
}

// ttlMillis is a TTL left in milliseconds, rounded up as pttl rounds it
// (an entry with 0.4 ms left is still there); -1 for none.
func ttlMillis(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

var _ backend.Scanner = Backend(nil)
