// Package sessionkeys is the session protocol's key rules, in one place:
// which session ids are valid, where a session's data and lock live, and
// what a lock token is. include/ephpm_session.h is generated from this
// file (go generate ./sessionkeys), so that C and Go read the same rules.
//
// It is a leaf package of its own, neither in the lock wait loop (package
// lockwait, which serves every lock, not only sessions) nor in a store,
// so that every layer, from the C header to a backend's tests, can name a
// session's keys without importing anything that stores them.
//
// Who applies what:
//   - the PHP session handler builds its keys and tokens in C, from the
//     header (php-ext/ephpm_session.c, php-ext/ephpm_token.c): it checks a
//     session id with PHP's own php_session_valid_key, as mod_files does,
//     whose rule is the one SIDChars and SIDMaxLen state;
//   - the bridge tells each backend which prefixes are the session's (kept
//     in one Cluster slot, never evicted while locked, within the session
//     budget);
//   - Go callers (a host that reads its scripts' sessions, tests,
//     benchmarks) build keys with DataKey and LockKey, and tokens with
//     NewToken, which also names a waiter in a lock's line (lockwait).
package sessionkeys

//go:generate go run ./internal/header/gen

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// A session <sid> keeps its data under DataPrefix+sid and its lock under
// LockPrefix+sid.
const (
	DataPrefix = "session:"
	LockPrefix = "session_lock:"
)

// A session id is 1..SIDMaxLen of SIDChars: PHP's rule
// (php_session_valid_key; session.sid_length is at most 256), which the
// handler applies so that no client picks an arbitrary store key.
const (
	SIDMaxLen = 256
	SIDChars  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789,-"
)

// A lock token is TokenBytes from a CSPRNG, hex-encoded: TokenLen
// characters. Every acquisition has its own, for session locks and
// ephpm_kv_lock alike.
const (
	TokenBytes = 16
	TokenLen   = 2 * TokenBytes
)

// ValidSID reports whether sid is a valid session id.
func ValidSID(sid string) bool {
	if len(sid) == 0 || len(sid) > SIDMaxLen {
		return false
	}
	for i := 0; i < len(sid); i++ {
		if strings.IndexByte(SIDChars, sid[i]) < 0 {
			return false
		}
	}
	return true
}

// DataKey is the key of session sid's data.
func DataKey(sid string) string { return DataPrefix + sid }

// LockKey is the key of session sid's lock.
func LockKey(sid string) string { return LockPrefix + sid }

// NewToken returns a fresh lock token: TokenBytes from the CSPRNG, hex, as
// the PHP handler's ephpm_new_token makes them.
func NewToken() (string, error) {
	b := make([]byte, TokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
