//go:build ephpmtest

// invoke.go calls the table's members from Go as a C consumer would, for
// the fuzz test; the ephpmtest build tag keeps it out of libephpm.so.

package bridge

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include <stdlib.h>
#include "ephpm_kv.h"

// Calls member op through this package's own table (invoke_gen.go,
// generated from the header with the table).
int call_member(int op, const char *k, size_t kl, const char *v, size_t vl,
                int64_t ttl, char *buf, size_t cap, size_t *len, int64_t *num);

static const char *nothing_done_text(void) { return EPHPM_KV_NOTHING_DONE; }
*/
import "C"

import "unsafe"

// invokeMember calls member op (see call_member) of the table with C copies
// of key and value (or NULL pointers, when asked), and returns its status
// and what it wrote to the output buffer of bufCap bytes. It exists for the
// fuzz test of the C argument path; nothing else calls it.
func invokeMember(op int, key, value []byte, nullKey, nullValue bool, arg int64, bufCap int) (int, []byte) {
	cbytes := func(b []byte, null bool) (*C.char, func()) {
		if null {
			return nil, func() {}
		}
		p := C.malloc(C.size_t(len(b) + 1)) // +1: never a zero-size allocation
		copy(unsafe.Slice((*byte)(p), len(b)), b)
		return (*C.char)(p), func() { C.free(p) }
	}
	k, freeK := cbytes(key, nullKey)
	defer freeK()
	v, freeV := cbytes(value, nullValue)
	defer freeV()
	buf := C.malloc(C.size_t(bufCap + 1))
	defer C.free(buf)
	var n C.size_t
	var num C.int64_t
	rc := C.call_member(C.int(op), k, C.size_t(len(key)), v, C.size_t(len(value)), C.int64_t(arg),
		(*C.char)(buf), C.size_t(bufCap), &n, &num)
	out := []byte(nil)
	if fillsBuffer(op) && rc == C.EPHPM_KV_OK {
		out = C.GoBytes(buf, C.int(n))
	}
	return int(rc), out
}

// nothingDoneText is include/ephpm_kv.h's EPHPM_KV_NOTHING_DONE, the
// beginning of last_error by which the extension knows that a refused call
// did nothing.
func nothingDoneText() string { return C.GoString(C.nothing_done_text()) }
