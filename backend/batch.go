package backend

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// Missing is the value length of a get_many record for a key without a
// live entry (EPHPM_KV_BATCH_MISSING).
const Missing = math.MaxUint32

// PutRecord writes the get_many value record of value (or of a missing key,
// when found is false) at dst[n:] if it fits, and returns n plus its length
// either way: the records are measured even where dst has no more room.
func PutRecord(dst []byte, n int, value []byte, found bool) int {
	if !found {
		if n+4 <= len(dst) {
			binary.NativeEndian.PutUint32(dst[n:], Missing)
		}
		return n + 4
	}
	if n+4+len(value) <= len(dst) {
		binary.NativeEndian.PutUint32(dst[n:], uint32(len(value)))
		copy(dst[n+4:], value)
	}
	return n + 4 + len(value)
}

// GetEach is GetMany for a backend whose single reads are cheap (the
// in-process and shared-memory stores): one get per key, each copying its
// value straight into its record in dst.
func GetEach(get func(key string, dst []byte) (int, bool, error), keys []string, dst []byte) (int, error) {
	n := 0
	for _, k := range keys {
		var room []byte
		if n+4 <= len(dst) {
			room = dst[n+4:]
		}
		vn, found, err := get(k, room)
		if err != nil {
			return 0, err
		}
		if !found {
			n = PutRecord(dst, n, nil, false)
			continue
		}
		if n+4+vn <= len(dst) {
			binary.NativeEndian.PutUint32(dst[n:], uint32(vn))
		}
		n += 4 + vn
	}
	return n, nil
}

// CheckBatch is contract.CheckWrite for every entry of a set_many, so that a bad
// one refuses the batch before anything is written. The error names the
// entry by its position.
func CheckBatch(keys []string, values [][]byte, ttl time.Duration) error {
	if len(keys) != len(values) {
		return fmt.Errorf("%w: %d keys for %d values", contract.ErrInvalidArgument, len(keys), len(values))
	}
	if err := contract.CheckTTL(ttl); err != nil {
		return err
	}
	for i, k := range keys {
		if err := contract.CheckWrite(k, values[i], ttl); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
	}
	return nil
}

// SetEach is SetMany for a backend that writes one key at a time: it checks
// the batch, then sets each entry in order and stops at the first failure,
// which names the key.
func SetEach(set func(key string, value []byte, ttl time.Duration) error, keys []string, values [][]byte, ttl time.Duration) (int, error) {
	if err := CheckBatch(keys, values, ttl); err != nil {
		return 0, err
	}
	for i, k := range keys {
		if err := set(k, values[i], ttl); err != nil {
			return i, fmt.Errorf("key %q: %w", k, err)
		}
	}
	return len(keys), nil
}

func (m Memory) GetMany(keys []string, dst []byte) (int, error) {
	return GetEach(m.GetInto, keys, dst)
}

func (m Memory) SetMany(keys []string, values [][]byte, ttl time.Duration) (int, error) {
	return SetEach(m.Store.Set, keys, values, ttl)
}
