package bridge

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include "ephpm_kv.h"
*/
import "C"

import (
	"errors"
	"time"
	"unsafe"

	"github.com/ephpm/ephpm/kv"
	"github.com/ephpm/ephpm/session"
)

// The functions below are the Go halves of the table's members; table.c
// calls them after its fork guard and NULL-pointer checks. Each borrows the
// caller's buffers for the duration of the call only: keys are viewed, not
// copied (the store copies what it keeps).

func keyArg(p *C.char, n C.size_t) (string, bool) {
	if n == 0 || n > kv.MaxKeyLen {
		return "", false
	}
	return unsafe.String((*byte)(unsafe.Pointer(p)), int(n)), true
}

func bytesArg(p *C.char, n C.size_t) ([]byte, bool) {
	if n > kv.MaxValueLen {
		return nil, false
	}
	if n == 0 {
		return []byte{}, true
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n)), true
}

func ttlArg(ms C.int64_t) (time.Duration, bool) {
	if ms < 0 || int64(ms) > int64(kv.MaxTTL/time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// failure maps an error to its status code.
func failure(err error) C.int {
	if errors.Is(err, kv.ErrInvalidArgument) {
		return C.EPHPM_KV_E_INVALID
	}
	return C.EPHPM_KV_E_UNAVAILABLE
}

// recoverStatus turns a panic into "outcome unknown" instead of letting it
// take the host process down. It is deferred by every export.
func recoverStatus(rc *C.int) {
	if recover() != nil {
		*rc = C.EPHPM_KV_E_UNAVAILABLE
	}
}

func answer(ok bool) C.int {
	if ok {
		return C.EPHPM_KV_OK
	}
	return C.EPHPM_KV_MISS
}

//export ephpmGoGet
func ephpmGoGet(key *C.char, keyLen C.size_t, buf *C.char, bufCap C.size_t, valueLen *C.size_t) (rc C.int) {
	defer recoverStatus(&rc)
	*valueLen = 0
	k, ok := keyArg(key, keyLen)
	if !ok {
		return C.EPHPM_KV_E_INVALID
	}
	v, found, err := current().Get(k)
	if err != nil {
		return failure(err)
	}
	if !found {
		return C.EPHPM_KV_MISS
	}
	*valueLen = C.size_t(len(v))
	if len(v) > int(bufCap) {
		return C.EPHPM_KV_TOO_SMALL
	}
	if len(v) > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(buf)), len(v)), v)
	}
	return C.EPHPM_KV_OK
}

func writeArgs(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs C.int64_t) (string, []byte, time.Duration, bool) {
	k, okK := keyArg(key, keyLen)
	v, okV := bytesArg(value, valueLen)
	ttl, okT := ttlArg(ttlMs)
	return k, v, ttl, okK && okV && okT
}

//export ephpmGoSet
func ephpmGoSet(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs C.int64_t) (rc C.int) {
	defer recoverStatus(&rc)
	k, v, ttl, ok := writeArgs(key, keyLen, value, valueLen, ttlMs)
	if !ok {
		return C.EPHPM_KV_E_INVALID
	}
	if err := current().Set(k, v, ttl); err != nil {
		return failure(err)
	}
	return C.EPHPM_KV_OK
}

//export ephpmGoSetNX
func ephpmGoSetNX(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs C.int64_t) (rc C.int) {
	defer recoverStatus(&rc)
	k, v, ttl, ok := writeArgs(key, keyLen, value, valueLen, ttlMs)
	if !ok {
		return C.EPHPM_KV_E_INVALID
	}
	out, err := current().SetNX(k, v, ttl)
	if err != nil {
		return failure(err)
	}
	if out == kv.Inserted {
		return C.EPHPM_KV_OK
	}
	return C.EPHPM_KV_EXISTS
}

//export ephpmGoDel
func ephpmGoDel(key *C.char, keyLen C.size_t) (rc C.int) {
	defer recoverStatus(&rc)
	k, ok := keyArg(key, keyLen)
	if !ok {
		return C.EPHPM_KV_E_INVALID
	}
	removed, err := current().Del(k)
	if err != nil {
		return failure(err)
	}
	return answer(removed)
}

//export ephpmGoDelIfEq
func ephpmGoDelIfEq(key *C.char, keyLen C.size_t, token *C.char, tokenLen C.size_t) (rc C.int) {
	defer recoverStatus(&rc)
	k, okK := keyArg(key, keyLen)
	t, okT := bytesArg(token, tokenLen)
	if !okK || !okT {
		return C.EPHPM_KV_E_INVALID
	}
	removed, err := current().DelIfEq(k, t)
	if err != nil {
		return failure(err)
	}
	return answer(removed)
}

//export ephpmGoWait
func ephpmGoWait(key *C.char, keyLen C.size_t, timeoutMs C.int64_t) (rc C.int) {
	defer recoverStatus(&rc)
	k, okK := keyArg(key, keyLen)
	timeout, okT := ttlArg(timeoutMs)
	if !okK || !okT {
		return C.EPHPM_KV_E_INVALID
	}
	free, err := current().Wait(k, timeout)
	if err != nil {
		return failure(err)
	}
	if free {
		return C.EPHPM_KV_OK
	}
	return C.EPHPM_KV_EXISTS
}

//export ephpmGoSetNXWait
func ephpmGoSetNXWait(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs, waitMs C.int64_t) (rc C.int) {
	defer recoverStatus(&rc)
	k, v, ttl, ok := writeArgs(key, keyLen, value, valueLen, ttlMs)
	budget, okW := ttlArg(waitMs)
	if !ok || !okW {
		return C.EPHPM_KV_E_INVALID
	}
	locker := session.Locker{Store: current()}
	res, err := locker.Acquire(k, v, ttl, budget)
	if err != nil {
		return failure(err)
	}
	if res.Acquired {
		return C.EPHPM_KV_OK
	}
	return C.EPHPM_KV_EXISTS
}

//export ephpmGoSetGuarded
func ephpmGoSetGuarded(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs C.int64_t,
	guardKey *C.char, guardKeyLen C.size_t, guardToken *C.char, guardTokenLen C.size_t) (rc C.int) {
	defer recoverStatus(&rc)
	k, v, ttl, ok := writeArgs(key, keyLen, value, valueLen, ttlMs)
	gk, okG := keyArg(guardKey, guardKeyLen)
	gt, okT := bytesArg(guardToken, guardTokenLen)
	if !ok || !okG || !okT {
		return C.EPHPM_KV_E_INVALID
	}
	written, err := current().SetGuarded(k, v, ttl, gk, gt)
	if err != nil {
		return failure(err)
	}
	return answer(written)
}

//export ephpmGoExpire
func ephpmGoExpire(key *C.char, keyLen C.size_t, ttlMs C.int64_t) (rc C.int) {
	defer recoverStatus(&rc)
	k, okK := keyArg(key, keyLen)
	ttl, okT := ttlArg(ttlMs)
	if !okK || !okT {
		return C.EPHPM_KV_E_INVALID
	}
	done, err := current().Expire(k, ttl)
	if err != nil {
		return failure(err)
	}
	return answer(done)
}
