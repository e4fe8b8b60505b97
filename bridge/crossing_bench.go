//go:build ephpmtest

// crossing_bench.go calls a few members through the table from a loop in
// C, as the extension does, so that a benchmark measures one whole
// crossing per call (the fork guard, the NULL checks, cgo's entry into Go,
// the export and the store) and nothing of Go's own calling. The ephpmtest
// build tag keeps it out of libephpm.so.

package bridge

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include <stdlib.h>
#include "ephpm_kv.h"

// Calls member op of the table n times; returns the last status.
static int bench_member(int op, const char *k, size_t kl, const char *v, size_t vl, long n)
{
    const ephpm_kv_ops *o = ephpm_kv_get_ops();
    char buf[256];
    size_t len;
    int64_t num;
    int rc = 0;
    for (long i = 0; i < n; i++) {
        switch (op) {
        case 0: rc = o->get(k, kl, buf, sizeof buf, &len); break;
        case 1: rc = o->set(k, kl, v, vl, 0); break;
        case 2: rc = o->exists(k, kl); break;
        case 3: rc = o->set_nx(k, kl, v, vl, 60000);
                if (rc == EPHPM_KV_OK) rc = o->del_if_eq(k, kl, v, vl);
                break;
        case 4: rc = o->incr_by(k, kl, 1, 0, &num); break;
        case 5: rc = o->pttl(k, kl, &num); break;
        }
    }
    return rc;
}
*/
import "C"

import "unsafe"

// The members benchMember calls.
const (
	benchGet = iota
	benchSet
	benchExists
	benchLockPair // set_nx, then del_if_eq: two crossings
	benchIncrBy
	benchPTTL
)

// benchMember calls member op (see bench_member) n times with key and
// value, from C, and returns the last status.
func benchMember(op int, key, value string, n int) int {
	k, v := C.CString(key), C.CString(value)
	defer C.free(unsafe.Pointer(k))
	defer C.free(unsafe.Pointer(v))
	return int(C.bench_member(C.int(op), k, C.size_t(len(key)), v, C.size_t(len(value)), C.long(n)))
}
