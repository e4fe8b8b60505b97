//go:build ephpmtest

package bridge

import (
	"bytes"
	"testing"
)

// Arbitrary bytes through every member of the table, the way C calls it:
// no input crashes the process, every status is one the header documents,
// and a value that was stored reads back byte for byte.
func FuzzTableMembers(f *testing.F) {
	f.Add(uint8(memberSet), []byte("key"), []byte("value"), false, false, int64(0), uint16(16))
	f.Add(uint8(memberGet), []byte("key"), []byte(""), false, true, int64(-1), uint16(0))
	f.Add(uint8(memberConfigure), []byte("memory_limit"), []byte("-5"), false, false, int64(0), uint16(0))
	f.Add(uint8(memberWait), []byte("k"), []byte{}, true, false, int64(1), uint16(1))
	f.Add(uint8(memberIncrBy), []byte("n"), []byte{}, false, false, int64(1<<62), uint16(0))
	valid := map[int]bool{0: true, 1: true, 2: true, 3: true, -1: true, -2: true, -3: true, -4: true, -7: true, -8: true}
	f.Fuzz(func(t *testing.T, op uint8, key, value []byte, nullKey, nullValue bool, arg int64, bufCap uint16) {
		o := int(op) % tableMembers
		if o == memberWait || o == memberSetNXWait || o == memberSetNXWaitFenced || o == memberSetNXWaitGet || o == memberSetNXWaitGetFenced || o == memberLockAcquire {
			arg %= 5 // these wait for up to arg ms: keep the fuzzer fast
		}
		if o == memberConfigure {
			defer func() { // leave the store as the other inputs expect it
				configure("memory_limit", "0")
				configure("session_memory_limit", "0")
			}()
		}
		rc, out := invokeMember(o, key, value, nullKey, nullValue, arg, int(bufCap))
		if !valid[rc] {
			t.Fatalf("member %d answered %d, which the header does not define", o, rc)
		}
		if (nullKey && len(key) > 0) && takesKey(o) && rc != -3 {
			t.Fatalf("member %d accepted a NULL key of %d bytes (rc %d)", o, len(key), rc)
		}
		// Read back what set stored, unless its TTL (arg ms) may have run
		// out by then: a loaded host can take longer than a few ms.
		if o == memberSet && rc == 0 && (arg == 0 || arg >= 60_000) {
			rc, out = invokeMember(memberGet, key, nil, false, false, 0, len(value))
			if rc != 0 || !bytes.Equal(out, value) {
				t.Fatalf("set then get: rc %d, %q != %q", rc, out, value)
			}
		}
		_ = out
	})
}
