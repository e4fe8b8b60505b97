package bridge

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include "ephpm_kv.h"
void ephpm_set_last_error(const char *msg, size_t len);
*/
import "C"

import (
	"errors"
	"time"
	"unsafe"

	"github.com/ephpm/ephpm/backend"
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

// failure maps an error to its status code, and records its message for
// the last_error member of this thread.
func failure(err error) C.int {
	msg := err.Error()
	C.ephpm_set_last_error((*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
	switch {
	case errors.Is(err, kv.ErrInvalidArgument):
		return C.EPHPM_KV_E_INVALID
	case errors.Is(err, kv.ErrNoMemory):
		return C.EPHPM_KV_E_NOMEM
	case errors.Is(err, kv.ErrNotInteger):
		return C.EPHPM_KV_E_NOT_INTEGER
	case errors.Is(err, kv.ErrOverflow):
		return C.EPHPM_KV_E_OVERFLOW
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
	var dst []byte
	if bufCap > 0 {
		dst = unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(bufCap))
	}
	n, found, err := current().GetInto(k, dst)
	if err != nil {
		return failure(err)
	}
	if !found {
		return C.EPHPM_KV_MISS
	}
	*valueLen = C.size_t(n)
	if n > int(bufCap) {
		return C.EPHPM_KV_TOO_SMALL
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
	lockTimeouts.Add(1)
	return C.EPHPM_KV_EXISTS
}

//export ephpmGoSetNXWaitGet
func ephpmGoSetNXWaitGet(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs, waitMs C.int64_t,
	dataKey *C.char, dataKeyLen C.size_t, buf *C.char, bufCap C.size_t, dataLen *C.size_t) (rc C.int) {
	defer recoverStatus(&rc)
	*dataLen = 0
	k, v, ttl, ok := writeArgs(key, keyLen, value, valueLen, ttlMs)
	budget, okW := ttlArg(waitMs)
	dk, okD := keyArg(dataKey, dataKeyLen)
	if !ok || !okW || !okD {
		return C.EPHPM_KV_E_INVALID
	}
	var dst []byte
	if bufCap > 0 {
		dst = unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(bufCap))
	}
	locker := session.Locker{Store: current()}
	res, read, err := locker.AcquireGet(k, v, ttl, budget, dk, dst)
	if err != nil {
		return failure(err)
	}
	if !res.Acquired {
		lockTimeouts.Add(1)
		return C.EPHPM_KV_EXISTS
	}
	if !read.Found {
		return C.EPHPM_KV_MISS
	}
	*dataLen = C.size_t(read.N)
	if read.N > int(bufCap) {
		return C.EPHPM_KV_TOO_SMALL
	}
	return C.EPHPM_KV_OK
}

//export ephpmGoSetGuardedRelease
func ephpmGoSetGuardedRelease(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs C.int64_t,
	guardKey *C.char, guardKeyLen C.size_t, guardToken *C.char, guardTokenLen C.size_t) (rc C.int) {
	defer recoverStatus(&rc)
	return guardedWrite(backend.Backend.SetGuardedRelease, key, keyLen, value, valueLen, ttlMs,
		guardKey, guardKeyLen, guardToken, guardTokenLen)
}

//export ephpmGoSetGuarded
func ephpmGoSetGuarded(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs C.int64_t,
	guardKey *C.char, guardKeyLen C.size_t, guardToken *C.char, guardTokenLen C.size_t) (rc C.int) {
	defer recoverStatus(&rc)
	return guardedWrite(backend.Backend.SetGuarded, key, keyLen, value, valueLen, ttlMs,
		guardKey, guardKeyLen, guardToken, guardTokenLen)
}

// guardedWrite is set_guarded and set_guarded_release: their arguments, and
// write (the Backend method) on the current backend.
func guardedWrite(write func(backend.Backend, string, []byte, time.Duration, string, []byte) (bool, error),
	key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs C.int64_t,
	guardKey *C.char, guardKeyLen C.size_t, guardToken *C.char, guardTokenLen C.size_t) C.int {
	k, v, ttl, ok := writeArgs(key, keyLen, value, valueLen, ttlMs)
	gk, okG := keyArg(guardKey, guardKeyLen)
	gt, okT := bytesArg(guardToken, guardTokenLen)
	if !ok || !okG || !okT {
		return C.EPHPM_KV_E_INVALID
	}
	written, err := write(current(), k, v, ttl, gk, gt)
	if err != nil {
		return failure(err)
	}
	return answer(written)
}

//export ephpmGoDelGuarded
func ephpmGoDelGuarded(key *C.char, keyLen C.size_t, guardKey *C.char, guardKeyLen C.size_t,
	guardToken *C.char, guardTokenLen C.size_t) (rc C.int) {
	defer recoverStatus(&rc)
	k, okK := keyArg(key, keyLen)
	gk, okG := keyArg(guardKey, guardKeyLen)
	gt, okT := bytesArg(guardToken, guardTokenLen)
	if !okK || !okG || !okT {
		return C.EPHPM_KV_E_INVALID
	}
	held, err := current().DelGuarded(k, gk, gt)
	if err != nil {
		return failure(err)
	}
	return answer(held)
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

//export ephpmGoExists
func ephpmGoExists(key *C.char, keyLen C.size_t) (rc C.int) {
	defer recoverStatus(&rc)
	k, ok := keyArg(key, keyLen)
	if !ok {
		return C.EPHPM_KV_E_INVALID
	}
	found, err := current().Exists(k)
	if err != nil {
		return failure(err)
	}
	return answer(found)
}

//export ephpmGoPTTL
func ephpmGoPTTL(key *C.char, keyLen C.size_t, ttlMs *C.int64_t) (rc C.int) {
	defer recoverStatus(&rc)
	k, ok := keyArg(key, keyLen)
	if !ok {
		return C.EPHPM_KV_E_INVALID
	}
	ttl, found, err := current().PTTL(k)
	if err != nil {
		return failure(err)
	}
	if !found {
		return C.EPHPM_KV_MISS
	}
	if ttl < 0 {
		*ttlMs = -1
	} else {
		// Round up: an entry with 0.4 ms left is still there.
		*ttlMs = C.int64_t((ttl + time.Millisecond - 1) / time.Millisecond)
	}
	return C.EPHPM_KV_OK
}

//export ephpmGoExpireIfEq
func ephpmGoExpireIfEq(key *C.char, keyLen C.size_t, token *C.char, tokenLen C.size_t, ttlMs C.int64_t) (rc C.int) {
	defer recoverStatus(&rc)
	k, okK := keyArg(key, keyLen)
	t, okT := bytesArg(token, tokenLen)
	ttl, okTTL := ttlArg(ttlMs)
	if !okK || !okT || !okTTL {
		return C.EPHPM_KV_E_INVALID
	}
	done, err := current().ExpireIfEq(k, t, ttl)
	if err != nil {
		return failure(err)
	}
	return answer(done)
}

//export ephpmGoIncrBy
func ephpmGoIncrBy(key *C.char, keyLen C.size_t, delta C.int64_t, ttlMs C.int64_t, result *C.int64_t) (rc C.int) {
	defer recoverStatus(&rc)
	k, okK := keyArg(key, keyLen)
	ttl, okT := ttlArg(ttlMs)
	if !okK || !okT {
		return C.EPHPM_KV_E_INVALID
	}
	n, err := current().IncrBy(k, int64(delta), ttl)
	if err != nil {
		return failure(err)
	}
	*result = C.int64_t(n)
	return C.EPHPM_KV_OK
}

//export ephpmGoFlush
func ephpmGoFlush() (rc C.int) {
	defer recoverStatus(&rc)
	if err := current().Flush(); err != nil {
		return failure(err)
	}
	return C.EPHPM_KV_OK
}

// setText copies s into a fixed C char array, NUL-terminated, cut to fit.
func setText(dst []C.char, s string) {
	n := min(len(s), len(dst)-1)
	for i := 0; i < n; i++ {
		dst[i] = C.char(s[i])
	}
	dst[n] = 0
}

//export ephpmGoStats
func ephpmGoStats(out *C.ephpm_kv_stats) (rc C.int) {
	defer recoverStatus(&rc)
	b := current()
	st, err := b.Stats()
	if err != nil {
		return failure(err)
	}
	var full C.ephpm_kv_stats
	full.struct_size = out.struct_size
	setText(full.instance_id[:], st.InstanceID)
	setText(full.backend[:], b.Name())
	setText(full.eviction[:], st.Eviction)
	compression := "none"
	if st.Compression {
		compression = "lz4"
	}
	setText(full.compression[:], compression)
	full.keys = C.int64_t(st.Keys)
	full.bytes_used = C.int64_t(st.BytesUsed)
	full.memory_limit = C.int64_t(st.MemoryLimit)
	full.hits, full.misses, full.sets = C.uint64_t(st.Hits), C.uint64_t(st.Misses), C.uint64_t(st.Sets)
	full.evictions, full.expirations = C.uint64_t(st.Evictions), C.uint64_t(st.Expirations)
	full.set_nx_wins, full.set_nx_losses = C.uint64_t(st.SetNXWins), C.uint64_t(st.SetNXLosses)
	full.del_if_eq_matches = C.uint64_t(st.DelIfEqMatches)
	full.del_if_eq_mismatches = C.uint64_t(st.DelIfEqMismatches)
	full.lock_timeouts = C.uint64_t(lockTimeouts.Load())
	full.session_bytes, full.session_limit = C.int64_t(st.SessionBytes), C.int64_t(st.SessionLimit)
	full.processes = C.int64_t(st.Processes)
	// Fill only what the caller's struct has room for.
	n := min(uintptr(out.struct_size), unsafe.Sizeof(full))
	copy(unsafe.Slice((*byte)(unsafe.Pointer(out)), n), unsafe.Slice((*byte)(unsafe.Pointer(&full)), n))
	return C.EPHPM_KV_OK
}

//export ephpmGoConfigure
func ephpmGoConfigure(name *C.char, nameLen C.size_t, value *C.char, valueLen C.size_t) (rc C.int) {
	defer recoverStatus(&rc)
	n, okN := bytesArg(name, nameLen)
	v, okV := bytesArg(value, valueLen)
	if !okN || !okV {
		return C.EPHPM_KV_E_INVALID
	}
	if err := configure(string(n), string(v)); err != nil {
		return failure(err)
	}
	return C.EPHPM_KV_OK
}
