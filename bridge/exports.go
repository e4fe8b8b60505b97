package bridge

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include "ephpm_kv.h"
void ephpm_set_last_error(const char *msg, size_t len);
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/kv"
	"github.com/ephpm/ephpm/session"
)

// The functions below are the Go halves of the table's members; the
// wrappers of members.c call them after the fork guard and the NULL checks.
// Each borrows the caller's buffers for the duration of the call only: keys
// are viewed, not copied (the store copies what it keeps).

// args turns one call's C arguments into Go values and keeps the first
// rejection, which the member reports through failure, so that last_error
// says why. The limits are kv's (CheckKey, CheckValue, CheckTTL), the one
// authority every backend shares; args adds only what Go itself needs: no
// length beyond an int, no duration beyond a time.Duration.
type args struct{ err error }

func (a *args) reject(err error) {
	if a.err == nil {
		a.err = err
	}
}

// key, bytes and duration are small enough to inline: a length or TTL that
// kv accepts takes the inlined path, and any other goes to their checked
// form, where kv's check (or Go's own limit) decides and says why.

// key views a key of n bytes at p.
func (a *args) key(p *C.char, n C.size_t) string {
	if n-1 < kv.MaxKeyLen { // 1..MaxKeyLen: kv.CheckKey accepts it
		return unsafe.String((*byte)(unsafe.Pointer(p)), int(n))
	}
	return a.checkedKey(p, n)
}

func (a *args) checkedKey(p *C.char, n C.size_t) string {
	k := unsafe.String((*byte)(unsafe.Pointer(p)), a.length(n))
	if err := kv.CheckKey(k); err != nil {
		a.reject(err)
	}
	return k
}

// bytes views a value (or token) of n bytes at p.
func (a *args) bytes(p *C.char, n C.size_t) []byte {
	if n-1 < kv.MaxValueLen { // 1..MaxValueLen: kv.CheckValue accepts it
		return unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n))
	}
	return a.checkedBytes(p, n)
}

func (a *args) checkedBytes(p *C.char, n C.size_t) []byte {
	if n == 0 {
		return []byte{}
	}
	v := unsafe.Slice((*byte)(unsafe.Pointer(p)), a.length(n))
	if err := kv.CheckValue(v); err != nil {
		a.reject(err)
	}
	return v
}

// duration is ms milliseconds: a TTL, or how long a call may wait.
func (a *args) duration(ms C.int64_t) time.Duration {
	if uint64(ms) <= uint64(kv.MaxTTL/time.Millisecond) { // kv.CheckTTL accepts it
		return time.Duration(ms) * time.Millisecond
	}
	return a.checkedDuration(ms)
}

func (a *args) checkedDuration(ms C.int64_t) time.Duration {
	// Beyond what a time.Duration holds either way: the product would wrap
	// (a very negative ms into a valid TTL).
	if int64(ms) > math.MaxInt64/int64(time.Millisecond) || int64(ms) < math.MinInt64/int64(time.Millisecond) {
		a.reject(fmt.Errorf("%w: %d ms is beyond %v", kv.ErrInvalidArgument, int64(ms), kv.MaxTTL))
		return 0
	}
	d := time.Duration(ms) * time.Millisecond
	if err := kv.CheckTTL(d); err != nil {
		a.reject(err)
	}
	return d
}

// length is n as an int, if no argument can be that long.
func (a *args) length(n C.size_t) int {
	if uint64(n) > math.MaxInt32 {
		a.reject(fmt.Errorf("%w: a length of %d bytes", kv.ErrInvalidArgument, uint64(n)))
		return 0
	}
	return int(n)
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

// unanswered is an export's status until one of its return statements
// sets it. Every export sets it first and then defers recoverStatus.
const unanswered = C.int(math.MinInt32)

// recoverStatus turns a panic into "outcome unknown", recording what
// panicked for last_error, instead of letting it take the host process
// down. Deferred by every export after it sets rc to unanswered: a return
// has replaced that by the time it runs, unless the call is panicking, so
// it calls recover (a few ns per call: docs/measurements.md) only then.
func recoverStatus(rc *C.int) {
	if *rc == unanswered {
		*rc = panicked(recover())
	}
}

// panicked is the status of a call that panicked with r, recorded for
// last_error.
func panicked(r any) C.int {
	return failure(fmt.Errorf("the library panicked: %v", r))
}

func answer(ok bool) C.int {
	if ok {
		return C.EPHPM_KV_OK
	}
	return C.EPHPM_KV_MISS
}

//export ephpmGoGet
func ephpmGoGet(key *C.char, keyLen C.size_t, buf *C.char, bufCap C.size_t, valueLen *C.size_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	*valueLen = 0
	var a args
	k := a.key(key, keyLen)
	if a.err != nil {
		return failure(a.err)
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

//export ephpmGoSet
func ephpmGoSet(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs C.int64_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k, v, ttl := a.key(key, keyLen), a.bytes(value, valueLen), a.duration(ttlMs)
	if a.err != nil {
		return failure(a.err)
	}
	if err := current().Set(k, v, ttl); err != nil {
		return failure(err)
	}
	return C.EPHPM_KV_OK
}

//export ephpmGoSetNX
func ephpmGoSetNX(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs C.int64_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k, v, ttl := a.key(key, keyLen), a.bytes(value, valueLen), a.duration(ttlMs)
	if a.err != nil {
		return failure(a.err)
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
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k := a.key(key, keyLen)
	if a.err != nil {
		return failure(a.err)
	}
	removed, err := current().Del(k)
	if err != nil {
		return failure(err)
	}
	return answer(removed)
}

//export ephpmGoDelIfEq
func ephpmGoDelIfEq(key *C.char, keyLen C.size_t, token *C.char, tokenLen C.size_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k := a.key(key, keyLen)
	t := a.bytes(token, tokenLen)
	if a.err != nil {
		return failure(a.err)
	}
	removed, err := current().DelIfEq(k, t)
	if err != nil {
		return failure(err)
	}
	return answer(removed)
}

//export ephpmGoWait
func ephpmGoWait(key *C.char, keyLen C.size_t, timeoutMs C.int64_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k := a.key(key, keyLen)
	timeout := a.duration(timeoutMs)
	if a.err != nil {
		return failure(a.err)
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
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k, v, ttl, budget := a.key(key, keyLen), a.bytes(value, valueLen), a.duration(ttlMs), a.duration(waitMs)
	if a.err != nil {
		return failure(a.err)
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

//export ephpmGoSetNXWaitFenced
func ephpmGoSetNXWaitFenced(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs, waitMs C.int64_t,
	fence *C.int64_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	*fence = 0
	var a args
	k, v, ttl, budget := a.key(key, keyLen), a.bytes(value, valueLen), a.duration(ttlMs), a.duration(waitMs)
	if a.err != nil {
		return failure(a.err)
	}
	b := current()
	locker := session.Locker{Store: b}
	res, f, err := locker.AcquireFenced(b, k, v, ttl, budget)
	if err != nil {
		return failure(err)
	}
	if res.Acquired {
		*fence = C.int64_t(f)
		return C.EPHPM_KV_OK
	}
	lockTimeouts.Add(1)
	return C.EPHPM_KV_EXISTS
}

//export ephpmGoFence
func ephpmGoFence(key *C.char, keyLen C.size_t, fence *C.int64_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	*fence = 0
	var a args
	k := a.key(key, keyLen)
	if a.err != nil {
		return failure(a.err)
	}
	f, err := current().Fence(k)
	if err != nil {
		return failure(err)
	}
	*fence = C.int64_t(f)
	return C.EPHPM_KV_OK
}

//export ephpmGoSetFenced
func ephpmGoSetFenced(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs C.int64_t,
	lock *C.char, lockLen C.size_t, fence C.int64_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k, v, ttl, l := a.key(key, keyLen), a.bytes(value, valueLen), a.duration(ttlMs), a.key(lock, lockLen)
	if a.err != nil {
		return failure(a.err)
	}
	written, err := current().SetFenced(k, v, ttl, l, int64(fence))
	if err != nil {
		return failure(err)
	}
	return answer(written)
}

//export ephpmGoDelFenced
func ephpmGoDelFenced(key *C.char, keyLen C.size_t, lock *C.char, lockLen C.size_t, fence C.int64_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k, l := a.key(key, keyLen), a.key(lock, lockLen)
	if a.err != nil {
		return failure(a.err)
	}
	held, err := current().DelFenced(k, l, int64(fence))
	if err != nil {
		return failure(err)
	}
	return answer(held)
}

//export ephpmGoSetNXWaitGet
func ephpmGoSetNXWaitGet(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs, waitMs C.int64_t,
	dataKey *C.char, dataKeyLen C.size_t, buf *C.char, bufCap C.size_t, dataLen *C.size_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	return lockAndGet(key, keyLen, value, valueLen, ttlMs, waitMs, dataKey, dataKeyLen, buf, bufCap, dataLen, nil)
}

//export ephpmGoSetNXWaitGetFenced
func ephpmGoSetNXWaitGetFenced(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs, waitMs C.int64_t,
	dataKey *C.char, dataKeyLen C.size_t, buf *C.char, bufCap C.size_t, dataLen *C.size_t, fence *C.int64_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	*fence = 0
	return lockAndGet(key, keyLen, value, valueLen, ttlMs, waitMs, dataKey, dataKeyLen, buf, bufCap, dataLen, fence)
}

// lockAndGet is set_nx_wait_get, and with fence set_nx_wait_get_fenced,
// which puts the grant's fence there.
func lockAndGet(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs, waitMs C.int64_t,
	dataKey *C.char, dataKeyLen C.size_t, buf *C.char, bufCap C.size_t, dataLen *C.size_t, fence *C.int64_t) C.int {
	*dataLen = 0
	var a args
	k, v, ttl, budget := a.key(key, keyLen), a.bytes(value, valueLen), a.duration(ttlMs), a.duration(waitMs)
	dk := a.key(dataKey, dataKeyLen)
	if a.err != nil {
		return failure(a.err)
	}
	var dst []byte
	if bufCap > 0 {
		dst = unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(bufCap))
	}
	b := current()
	locker := session.Locker{Store: b}
	var res session.Result
	var read session.Read
	var err error
	if fence != nil {
		var f int64
		res, read, f, err = locker.AcquireGetFenced(b, k, v, ttl, budget, dk, dst)
		if err == nil && res.Acquired {
			*fence = C.int64_t(f)
		}
	} else {
		res, read, err = locker.AcquireGet(k, v, ttl, budget, dk, dst)
	}
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

//export ephpmGoSetFencedRelease
func ephpmGoSetFencedRelease(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs C.int64_t,
	lock *C.char, lockLen C.size_t, fence C.int64_t, token *C.char, tokenLen C.size_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k, v, ttl, l := a.key(key, keyLen), a.bytes(value, valueLen), a.duration(ttlMs), a.key(lock, lockLen)
	t := a.bytes(token, tokenLen)
	if a.err != nil {
		return failure(a.err)
	}
	written, err := current().SetFencedRelease(k, v, ttl, l, int64(fence), t)
	if err != nil {
		return failure(err)
	}
	return answer(written)
}

//export ephpmGoDelFencedRelease
func ephpmGoDelFencedRelease(key *C.char, keyLen C.size_t, lock *C.char, lockLen C.size_t, fence C.int64_t,
	token *C.char, tokenLen C.size_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k, l, t := a.key(key, keyLen), a.key(lock, lockLen), a.bytes(token, tokenLen)
	if a.err != nil {
		return failure(a.err)
	}
	removed, err := current().DelFencedRelease(k, l, int64(fence), t)
	if err != nil {
		return failure(err)
	}
	return answer(removed)
}

//export ephpmGoSetGuardedRelease
func ephpmGoSetGuardedRelease(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs C.int64_t,
	guardKey *C.char, guardKeyLen C.size_t, guardToken *C.char, guardTokenLen C.size_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	return guardedWrite(backend.Backend.SetGuardedRelease, key, keyLen, value, valueLen, ttlMs,
		guardKey, guardKeyLen, guardToken, guardTokenLen)
}

//export ephpmGoExpireGuardedRelease
func ephpmGoExpireGuardedRelease(key *C.char, keyLen C.size_t, ttlMs C.int64_t,
	guardKey *C.char, guardKeyLen C.size_t, guardToken *C.char, guardTokenLen C.size_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k, ttl := a.key(key, keyLen), a.duration(ttlMs)
	gk, gt := a.key(guardKey, guardKeyLen), a.bytes(guardToken, guardTokenLen)
	if a.err != nil {
		return failure(a.err)
	}
	done, err := current().ExpireGuardedRelease(k, ttl, gk, gt)
	if err != nil {
		return failure(err)
	}
	return answer(done)
}

//export ephpmGoSetGuarded
func ephpmGoSetGuarded(key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs C.int64_t,
	guardKey *C.char, guardKeyLen C.size_t, guardToken *C.char, guardTokenLen C.size_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	return guardedWrite(backend.Backend.SetGuarded, key, keyLen, value, valueLen, ttlMs,
		guardKey, guardKeyLen, guardToken, guardTokenLen)
}

// guardedWrite is set_guarded and set_guarded_release: their arguments, and
// write (the Backend method) on the current backend.
func guardedWrite(write func(backend.Backend, string, []byte, time.Duration, string, []byte) (bool, error),
	key *C.char, keyLen C.size_t, value *C.char, valueLen C.size_t, ttlMs C.int64_t,
	guardKey *C.char, guardKeyLen C.size_t, guardToken *C.char, guardTokenLen C.size_t) C.int {
	var a args
	k, v, ttl := a.key(key, keyLen), a.bytes(value, valueLen), a.duration(ttlMs)
	gk, gt := a.key(guardKey, guardKeyLen), a.bytes(guardToken, guardTokenLen)
	if a.err != nil {
		return failure(a.err)
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
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k := a.key(key, keyLen)
	gk := a.key(guardKey, guardKeyLen)
	gt := a.bytes(guardToken, guardTokenLen)
	if a.err != nil {
		return failure(a.err)
	}
	held, err := current().DelGuarded(k, gk, gt)
	if err != nil {
		return failure(err)
	}
	return answer(held)
}

//export ephpmGoExpire
func ephpmGoExpire(key *C.char, keyLen C.size_t, ttlMs C.int64_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k := a.key(key, keyLen)
	ttl := a.duration(ttlMs)
	if a.err != nil {
		return failure(a.err)
	}
	done, err := current().Expire(k, ttl)
	if err != nil {
		return failure(err)
	}
	return answer(done)
}

//export ephpmGoExists
func ephpmGoExists(key *C.char, keyLen C.size_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k := a.key(key, keyLen)
	if a.err != nil {
		return failure(a.err)
	}
	found, err := current().Exists(k)
	if err != nil {
		return failure(err)
	}
	return answer(found)
}

//export ephpmGoPTTL
func ephpmGoPTTL(key *C.char, keyLen C.size_t, ttlMs *C.int64_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k := a.key(key, keyLen)
	if a.err != nil {
		return failure(a.err)
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
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k := a.key(key, keyLen)
	t := a.bytes(token, tokenLen)
	ttl := a.duration(ttlMs)
	if a.err != nil {
		return failure(a.err)
	}
	done, err := current().ExpireIfEq(k, t, ttl)
	if err != nil {
		return failure(err)
	}
	return answer(done)
}

//export ephpmGoIncrBy
func ephpmGoIncrBy(key *C.char, keyLen C.size_t, delta C.int64_t, ttlMs C.int64_t, result *C.int64_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k := a.key(key, keyLen)
	ttl := a.duration(ttlMs)
	if a.err != nil {
		return failure(a.err)
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
	rc = unanswered
	defer recoverStatus(&rc)
	if err := current().Flush(); err != nil {
		return failure(err)
	}
	return C.EPHPM_KV_OK
}

//export ephpmGoBeginRequest
func ephpmGoBeginRequest() (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	if r, ok := current().(backend.Revalidator); ok {
		if err := r.Revalidate(); err != nil {
			return failure(err)
		}
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
	rc = unanswered
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
	setText(full.compression[:], kv.CompressionName(st.Compression))
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
	setText(full.store[:], *chosen.Load())
	// Fill only what the caller's struct has room for.
	n := min(uintptr(out.struct_size), unsafe.Sizeof(full))
	copy(unsafe.Slice((*byte)(unsafe.Pointer(out)), n), unsafe.Slice((*byte)(unsafe.Pointer(&full)), n))
	return C.EPHPM_KV_OK
}

//export ephpmGoConfigure
func ephpmGoConfigure(name *C.char, nameLen C.size_t, value *C.char, valueLen C.size_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	n := a.bytes(name, nameLen)
	v := a.bytes(value, valueLen)
	if a.err != nil {
		return failure(a.err)
	}
	if err := configure(string(n), string(v)); err != nil {
		return failure(err)
	}
	return C.EPHPM_KV_OK
}

// batch views the records of a batch buffer of n bytes at p (include/
// ephpm_kv.h, "Batch records"), count entries of perEntry records each,
// and hands each record to add in turn, viewed, not copied. It rejects,
// saying why, a count the buffer cannot hold and records that do not fill
// it exactly.
func (a *args) batch(p *C.char, n, count C.size_t, perEntry int, add func(rec []byte)) {
	if uint64(n) > math.MaxInt {
		a.reject(fmt.Errorf("%w: a batch of %d bytes", kv.ErrInvalidArgument, uint64(n)))
		return
	}
	if uint64(count) > uint64(n)/uint64(4*perEntry) {
		a.reject(fmt.Errorf("%w: %d batch entries cannot fit in %d bytes", kv.ErrInvalidArgument, uint64(count), uint64(n)))
		return
	}
	var buf []byte
	if n > 0 {
		buf = unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n))
	}
	for i := 0; i < int(count)*perEntry; i++ {
		if len(buf) < 4 {
			a.reject(fmt.Errorf("%w: batch record %d is cut short", kv.ErrInvalidArgument, i))
			return
		}
		rn := binary.NativeEndian.Uint32(buf)
		if uint64(rn) > uint64(len(buf)-4) {
			a.reject(fmt.Errorf("%w: batch record %d says %d bytes, %d are left", kv.ErrInvalidArgument, i, rn, len(buf)-4))
			return
		}
		add(buf[4 : 4+rn])
		buf = buf[4+rn:]
	}
	if len(buf) != 0 {
		a.reject(fmt.Errorf("%w: %d bytes after the last of %d batch records", kv.ErrInvalidArgument, len(buf), int(count)*perEntry))
	}
}

func asString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// batchLists holds the key and value lists of finished batch calls for the
// next ones, so a batch allocates nothing the collector must then find.
var batchLists = sync.Pool{New: func() any { return new(batchList) }}

type batchList struct {
	keys   []string
	values [][]byte
}

// done empties the lists (they view C memory, which the call's end frees)
// and returns them to the pool.
func (l *batchList) done() {
	clear(l.keys)
	clear(l.values)
	l.keys, l.values = l.keys[:0], l.values[:0]
	batchLists.Put(l)
}

//export ephpmGoGetMany
func ephpmGoGetMany(keys *C.char, keysLen C.size_t, count C.size_t, buf *C.char, bufCap C.size_t, outLen *C.size_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	*outLen = 0
	l := batchLists.Get().(*batchList)
	defer l.done()
	var a args
	a.batch(keys, keysLen, count, 1, func(k []byte) {
		key := asString(k)
		if err := kv.CheckKey(key); err != nil {
			a.reject(fmt.Errorf("batch key %d: %w", len(l.keys), err))
		}
		l.keys = append(l.keys, key)
	})
	if uint64(bufCap) > math.MaxInt {
		a.reject(fmt.Errorf("%w: a buffer of %d bytes", kv.ErrInvalidArgument, uint64(bufCap)))
	}
	if a.err != nil {
		return failure(a.err)
	}
	size := int(bufCap)
	var dst []byte
	if size > 0 {
		dst = unsafe.Slice((*byte)(unsafe.Pointer(buf)), size)
	}
	need, err := current().GetMany(l.keys, dst)
	if err != nil {
		return failure(err)
	}
	*outLen = C.size_t(need)
	if need > size {
		return C.EPHPM_KV_TOO_SMALL
	}
	return C.EPHPM_KV_OK
}

//export ephpmGoSetMany
func ephpmGoSetMany(entries *C.char, entriesLen C.size_t, count C.size_t, ttlMs C.int64_t, stored *C.size_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	*stored = 0
	l := batchLists.Get().(*batchList)
	defer l.done()
	var a args
	ttl := a.duration(ttlMs)
	a.batch(entries, entriesLen, count, 2, func(rec []byte) {
		if len(l.keys) == len(l.values) {
			l.keys = append(l.keys, asString(rec))
		} else {
			l.values = append(l.values, rec)
		}
	})
	if a.err != nil {
		return failure(a.err)
	}
	// The backend checks every key and value (backend.CheckBatch).
	done, err := current().SetMany(l.keys, l.values, ttl)
	*stored = C.size_t(done)
	if err != nil {
		return failure(err)
	}
	return C.EPHPM_KV_OK
}

//export ephpmGoLockAcquire
func ephpmGoLockAcquire(key *C.char, keyLen C.size_t, token *C.char, tokenLen C.size_t, mode C.int32_t,
	ttlMs, waitMs C.int64_t, fence *C.int64_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	*fence = 0
	var a args
	k, t, ttl, budget := a.key(key, keyLen), a.bytes(token, tokenLen), a.duration(ttlMs), a.duration(waitMs)
	if a.err != nil {
		return failure(a.err)
	}
	m := kv.LockMode(mode)
	if err := kv.CheckLockAttempt(k, t, m, ttl, 0); err != nil {
		return failure(err)
	}
	b := current()
	locker := session.Locker{Store: b}
	res, f, err := locker.AcquireLock(b, k, t, m, ttl, budget)
	if err != nil {
		return failure(err)
	}
	if res.Acquired {
		*fence = C.int64_t(f)
		return C.EPHPM_KV_OK
	}
	lockTimeouts.Add(1)
	return C.EPHPM_KV_EXISTS
}

//export ephpmGoLockRelease
func ephpmGoLockRelease(key *C.char, keyLen C.size_t, token *C.char, tokenLen C.size_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k, t := a.key(key, keyLen), a.bytes(token, tokenLen)
	if a.err != nil {
		return failure(a.err)
	}
	held, err := current().LockRelease(k, t)
	if err != nil {
		return failure(err)
	}
	return answer(held)
}

//export ephpmGoLockRefresh
func ephpmGoLockRefresh(key *C.char, keyLen C.size_t, token *C.char, tokenLen C.size_t, ttlMs C.int64_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	var a args
	k, t, ttl := a.key(key, keyLen), a.bytes(token, tokenLen), a.duration(ttlMs)
	if a.err != nil {
		return failure(a.err)
	}
	held, err := current().LockRefresh(k, t, ttl)
	if err != nil {
		return failure(err)
	}
	return answer(held)
}

//export ephpmGoLockInfo
func ephpmGoLockInfo(key *C.char, keyLen C.size_t, mode *C.int32_t, holders *C.int64_t) (rc C.int) {
	rc = unanswered
	defer recoverStatus(&rc)
	*mode, *holders = C.EPHPM_KV_LOCK_EXCLUSIVE, 0
	var a args
	k := a.key(key, keyLen)
	if a.err != nil {
		return failure(a.err)
	}
	m, n, err := current().LockInfo(k)
	if err != nil {
		return failure(err)
	}
	if n == 0 {
		return C.EPHPM_KV_MISS
	}
	*mode, *holders = C.int32_t(m), C.int64_t(n)
	return C.EPHPM_KV_OK
}
