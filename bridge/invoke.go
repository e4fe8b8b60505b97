//go:build ephpmtest

// invoke.go calls the table's members from Go as a C consumer would, for
// the fuzz test; the ephpmtest build tag keeps it out of libephpm.so.

package bridge

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include <stdlib.h>
#include "ephpm_kv.h"
#include "members.h"

// Calls through this package's own table, as a C consumer would: the fork
// guard, the NULL checks and the crossing back into Go all run.
static int call_member(int op, const char *k, size_t kl, const char *v, size_t vl,
                       int64_t ttl, char *buf, size_t cap, size_t *len, int64_t *num)
{
    const ephpm_kv_ops *o = ephpm_kv_get_ops();
    ephpm_kv_stats st = {.struct_size = sizeof st};
    switch (op) {
    case EPHPM_MEMBER_GET: return o->get(k, kl, buf, cap, len);
    case EPHPM_MEMBER_SET: return o->set(k, kl, v, vl, ttl);
    case EPHPM_MEMBER_SET_NX: return o->set_nx(k, kl, v, vl, ttl);
    case EPHPM_MEMBER_DEL: return o->del(k, kl);
    case EPHPM_MEMBER_DEL_IF_EQ: return o->del_if_eq(k, kl, v, vl);
    case EPHPM_MEMBER_WAIT: return o->wait(k, kl, ttl);
    case EPHPM_MEMBER_SET_NX_WAIT: return o->set_nx_wait(k, kl, v, vl, ttl, ttl);
    case EPHPM_MEMBER_SET_GUARDED: return o->set_guarded(k, kl, v, vl, ttl, v, vl, k, kl);
    case EPHPM_MEMBER_EXPIRE: return o->expire(k, kl, ttl);
    case EPHPM_MEMBER_EXISTS: return o->exists(k, kl);
    case EPHPM_MEMBER_PTTL: return o->pttl(k, kl, num);
    case EPHPM_MEMBER_EXPIRE_IF_EQ: return o->expire_if_eq(k, kl, v, vl, ttl);
    case EPHPM_MEMBER_INCR_BY: return o->incr_by(k, kl, ttl, ttl, num);
    case EPHPM_MEMBER_FLUSH: return o->flush();
    case EPHPM_MEMBER_STATS: return o->stats(&st);
    case EPHPM_MEMBER_CONFIGURE: return o->configure(k, kl, v, vl);
    case EPHPM_MEMBER_LAST_ERROR: return o->last_error(buf, cap, len);
    case EPHPM_MEMBER_DEL_GUARDED: return o->del_guarded(k, kl, v, vl, k, kl);
    case EPHPM_MEMBER_GET_MANY: return o->get_many(k, kl, (size_t)ttl, buf, cap, len);
    case EPHPM_MEMBER_SET_MANY: return o->set_many(k, kl, (size_t)ttl, 0, len);
    case EPHPM_MEMBER_SET_NX_WAIT_FENCED: return o->set_nx_wait_fenced(k, kl, v, vl, ttl, ttl, num);
    case EPHPM_MEMBER_FENCE: return o->fence(k, kl, num);
    case EPHPM_MEMBER_SET_FENCED: return o->set_fenced(k, kl, v, vl, ttl, k, kl, ttl);
    case EPHPM_MEMBER_DEL_FENCED: return o->del_fenced(k, kl, v, vl, ttl);
    case EPHPM_MEMBER_SET_NX_WAIT_GET: return o->set_nx_wait_get(k, kl, v, vl, ttl, ttl, k, kl, buf, cap, len);
    case EPHPM_MEMBER_SET_GUARDED_RELEASE: return o->set_guarded_release(k, kl, v, vl, ttl, v, vl, k, kl);
    case EPHPM_MEMBER_SET_NX_WAIT_GET_FENCED:
        return o->set_nx_wait_get_fenced(k, kl, v, vl, ttl, ttl, k, kl, buf, cap, len, num);
    case EPHPM_MEMBER_SET_FENCED_RELEASE: return o->set_fenced_release(k, kl, v, vl, ttl, k, kl, ttl, v, vl);
    case EPHPM_MEMBER_DEL_FENCED_RELEASE: return o->del_fenced_release(k, kl, v, vl, ttl, k, kl);
    case EPHPM_MEMBER_LOCK_ACQUIRE: return o->lock_acquire(k, kl, v, vl, (int32_t)(ttl & 1), ttl, ttl, num);
    case EPHPM_MEMBER_LOCK_RELEASE: return o->lock_release(k, kl, v, vl);
    case EPHPM_MEMBER_LOCK_REFRESH: return o->lock_refresh(k, kl, v, vl, ttl);
    case EPHPM_MEMBER_LOCK_INFO: { int32_t mode; return o->lock_info(k, kl, &mode, num); }
    case EPHPM_MEMBER_EXPIRE_GUARDED_RELEASE: return o->expire_guarded_release(k, kl, ttl, v, vl, k, kl);
    case EPHPM_MEMBER_BEGIN_REQUEST: return o->begin_request();
    }
    return -100;
}

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
	if (op == memberGet || op == memberLastError || op == memberGetMany) && rc == C.EPHPM_KV_OK {
		out = C.GoBytes(buf, C.int(n))
	}
	return int(rc), out
}

// nothingDoneText is include/ephpm_kv.h's EPHPM_KV_NOTHING_DONE, the
// beginning of last_error by which the extension knows that a refused call
// did nothing.
func nothingDoneText() string { return C.GoString(C.nothing_done_text()) }
