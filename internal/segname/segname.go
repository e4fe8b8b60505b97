// Package segname is the one rule that names the shared-memory segment a
// server's processes share by default (bridge's "auto" backend), so that
// the library and the ephpm command find the same segment for a pool.
package segname

import (
	"fmt"
	"hash/fnv"
)

// FPMPool is the segment php-fpm's pool called pool shares by default:
// Name("fpm-" + pool).
func FPMPool(pool string) string { return Name("fpm-" + pool) }

// Name makes s a segment name: 1-64 of [A-Za-z0-9._-]. A name that is one
// already is kept; any other is made one (each other byte replaced by '_',
// cut to 55 bytes) and given "-" and 8 hex digits of a hash of s, so that
// two pools whose names differ never share a segment ("a b" and "a_b", or
// two long names with one beginning).
func Name(s string) string {
	b := []byte(s)
	changed := len(b) > 64
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
			changed = true
		}
	}
	if !changed {
		return s
	}
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%s-%08x", b[:min(len(b), 55)], h.Sum32())
}
