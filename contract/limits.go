// The store's limits on its arguments (also the C ABI's), and the checks
// every backend that enforces them runs.

package contract

import (
	"fmt"
	"time"
)

// Limits on what the store accepts. They are part of the C ABI too
// (include/ephpm_kv.h repeats them for C callers).
const (
	MaxKeyLen   = 4096                      // bytes; a key is 1..MaxKeyLen bytes
	MaxValueLen = 256 << 20                 // bytes; a value is 0..MaxValueLen bytes
	MaxTTL      = (1<<31 - 1) * time.Second // longest TTL; 0 means no expiry
)

// CheckKey, CheckValue, CheckTTL and CheckWrite are the store's limits on its
// arguments, for every backend that enforces them itself: each returns an
// error wrapping ErrInvalidArgument that says what is out of range, or nil.
// Each is small enough to inline, its error built out of line: a call from
// PHP is checked by the bridge and again by the store, and for valid
// arguments each check is then one compare.
func CheckKey(key string) error {
	if uint(len(key))-1 >= MaxKeyLen { // an empty key wraps around
		return badKeyLen(len(key))
	}
	return nil
}

func CheckTTL(ttl time.Duration) error {
	if uint64(ttl) > uint64(MaxTTL) { // a negative TTL wraps around
		return badTTL(ttl)
	}
	return nil
}

func CheckWrite(key string, value []byte, ttl time.Duration) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := CheckValue(value); err != nil {
		return err
	}
	return CheckTTL(ttl)
}

func CheckValue(value []byte) error {
	if len(value) > MaxValueLen {
		return badValueLen(len(value))
	}
	return nil
}

func badKeyLen(n int) error {
	return fmt.Errorf("%w: key length %d is outside 1..%d", ErrInvalidArgument, n, MaxKeyLen)
}

func badTTL(ttl time.Duration) error {
	return fmt.Errorf("%w: ttl %v is outside 0..%v", ErrInvalidArgument, ttl, MaxTTL)
}

func badValueLen(n int) error {
	return fmt.Errorf("%w: value length %d exceeds %d", ErrInvalidArgument, n, MaxValueLen)
}
