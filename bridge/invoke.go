package bridge

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include <stdlib.h>
#include "ephpm_kv.h"

// Calls through this package's own table, as a C consumer would: the fork
// guard, the NULL checks and the crossing back into Go all run.
static int call_member(int op, const char *k, size_t kl, const char *v, size_t vl,
                       int64_t ttl, char *buf, size_t cap, size_t *len, int64_t *num)
{
    const ephpm_kv_ops *o = ephpm_kv_get_ops();
    switch (op) {
    case 0: return o->get(k, kl, buf, cap, len);
    case 1: return o->set(k, kl, v, vl, ttl);
    case 2: return o->set_nx(k, kl, v, vl, ttl);
    case 3: return o->del(k, kl);
    case 4: return o->del_if_eq(k, kl, v, vl);
    case 5: return o->wait(k, kl, ttl);
    case 6: return o->set_nx_wait(k, kl, v, vl, ttl, ttl);
    case 7: return o->set_guarded(k, kl, v, vl, ttl, v, vl, k, kl);
    case 8: return o->expire(k, kl, ttl);
    case 9: return o->exists(k, kl);
    case 10: return o->pttl(k, kl, num);
    case 11: return o->expire_if_eq(k, kl, v, vl, ttl);
    case 12: return o->incr_by(k, kl, ttl, ttl, num);
    case 13: return o->configure(k, kl, v, vl);
    case 14: return o->last_error(buf, cap, len);
    case 15: return o->del_guarded(k, kl, v, vl, k, kl);
    }
    return -100;
}
*/
import "C"

import "unsafe"

// tableMembers is how many members invokeMember can reach.
const tableMembers = 16

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
	if (op == 0 || op == 14) && rc == C.EPHPM_KV_OK {
		out = C.GoBytes(buf, C.int(n))
	}
	return int(rc), out
}
