package bridge

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include "ephpm_kv.h"
void ephpm_set_last_error(const char *msg, size_t len);
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/ephpm/ephpm/contract"
)

// answers.go turns what a member's Go side did into what C sees, for the
// exports (exports_gen.go): failure maps an error to its status code and
// last_error, recoverStatus a panic to "outcome unknown", the answers
// (answer, inserted, ...) and outputs (out*) a Go function's results to
// the member's status and what it writes through its pointers.

// failure maps an error to its status code, and records its message for
// the last_error member of this thread.
func failure(err error) C.int {
	msg := err.Error()
	C.ephpm_set_last_error((*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
	switch {
	case errors.Is(err, contract.ErrInvalidArgument):
		return C.EPHPM_KV_E_INVALID
	case errors.Is(err, contract.ErrNoMemory):
		return C.EPHPM_KV_E_NOMEM
	case errors.Is(err, contract.ErrNotInteger):
		return C.EPHPM_KV_E_NOT_INTEGER
	case errors.Is(err, contract.ErrOverflow):
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

// The answers: a Go function's results as the member's status, once the
// export has turned an error into its failure. For members without
// outputs; each is named after what its true or OK says.

// answer: OK if it happened (found, removed, written, held), else MISS.
func answer(ok bool) C.int {
	if ok {
		return C.EPHPM_KV_OK
	}
	return C.EPHPM_KV_MISS
}

// freed: OK if the key is free, else EXISTS (wait: still held).
func freed(free bool) C.int {
	if free {
		return C.EPHPM_KV_OK
	}
	return C.EPHPM_KV_EXISTS
}

// inserted: OK if this call inserted (set_nx) or was granted (the waiting
// members), else EXISTS.
func inserted(won contract.SetNXOutcome) C.int {
	if won == contract.Inserted {
		return C.EPHPM_KV_OK
	}
	return C.EPHPM_KV_EXISTS
}

// done: OK, or the failure (for a function that returns only an error).
func done(err error) C.int {
	if err != nil {
		return failure(err)
	}
	return C.EPHPM_KV_OK
}

// The outputs: what a member writes through its pointers. Each out*
// constructor runs before the arguments are read and sets what the header
// says the pointers hold when the call does not answer them (a length 0,
// no fence); its answer method then writes the results.

// bufferOut is a value copied into the caller's buffer, its length in *n
// (get, set_nx_wait_get): as get does, *n is 0 unless the value was
// found, and its length even when it does not fit.
type bufferOut struct {
	n   *C.size_t
	cap C.size_t
}

func outBuffer(n *C.size_t, cap C.size_t) bufferOut {
	*n = 0
	return bufferOut{n, cap}
}

// answer: OK with the value copied, TOO_SMALL with nothing copied, or MISS.
func (o bufferOut) answer(n int, found bool) C.int {
	if !found {
		return C.EPHPM_KV_MISS
	}
	*o.n = C.size_t(n)
	if n > int(o.cap) {
		return C.EPHPM_KV_TOO_SMALL
	}
	return C.EPHPM_KV_OK
}

// granted: EXISTS if the lock was not granted (nothing was read), else as
// answer.
func (o bufferOut) granted(won contract.SetNXOutcome, n int, found bool) C.int {
	if won != contract.Inserted {
		return C.EPHPM_KV_EXISTS
	}
	return o.answer(n, found)
}

// fencedBufferOut is bufferOut with the grant's fence in *fence, 0 unless
// granted (set_nx_wait_get_fenced).
type fencedBufferOut struct {
	bufferOut
	fence *C.int64_t
}

func outFencedBuffer(n *C.size_t, cap C.size_t, fence *C.int64_t) fencedBufferOut {
	*fence = 0
	return fencedBufferOut{outBuffer(n, cap), fence}
}

func (o fencedBufferOut) granted(won contract.SetNXOutcome, n int, found bool, fence int64) C.int {
	if won != contract.Inserted {
		return C.EPHPM_KV_EXISTS
	}
	*o.fence = C.int64_t(fence)
	return o.bufferOut.answer(n, found)
}

// recordsOut is a batch's value records in the caller's buffer, their
// length in *n, 0 until they are read (get_many).
type recordsOut struct {
	n   *C.size_t
	cap C.size_t
}

func outRecords(n *C.size_t, cap C.size_t) recordsOut {
	*n = 0
	return recordsOut{n, cap}
}

// answer: OK with the records in the buffer, or TOO_SMALL with *n the
// length they need.
func (o recordsOut) answer(need int) C.int {
	*o.n = C.size_t(need)
	if need > int(o.cap) {
		return C.EPHPM_KV_TOO_SMALL
	}
	return C.EPHPM_KV_OK
}

// pageOut is a walk's page of records in the caller's buffer, their
// length in *n, and the next page's cursor in *next, written only with OK
// (scan).
type pageOut struct {
	n    *C.size_t
	cap  C.size_t
	next *C.uint64_t
}

func outPage(n *C.size_t, cap C.size_t, next *C.uint64_t) pageOut {
	*n, *next = 0, 0
	return pageOut{n, cap, next}
}

// answer: OK with the records and the cursor, or TOO_SMALL with *n the
// length they need.
func (o pageOut) answer(need int, next uint64) C.int {
	*o.n = C.size_t(need)
	if need > int(o.cap) {
		return C.EPHPM_KV_TOO_SMALL
	}
	*o.next = C.uint64_t(next)
	return C.EPHPM_KV_OK
}

// storedOut is how many leading entries of a batch are stored, in *p:
// set even when the batch fails (set_many), so its answer takes the error.
type storedOut struct{ p *C.size_t }

func outStored(p *C.size_t) storedOut {
	*p = 0
	return storedOut{p}
}

func (o storedOut) answer(stored int, err error) C.int {
	*o.p = C.size_t(stored)
	return done(err)
}

// fenceOut is a fence in *p, 0 unless the call answers one (fence) or is
// granted one (set_nx_wait_fenced, lock_acquire).
type fenceOut struct{ p *C.int64_t }

func outFence(p *C.int64_t) fenceOut {
	*p = 0
	return fenceOut{p}
}

func (o fenceOut) answer(fence int64) C.int {
	*o.p = C.int64_t(fence)
	return C.EPHPM_KV_OK
}

// granted: OK with the grant's fence, or EXISTS.
func (o fenceOut) granted(won contract.SetNXOutcome, fence int64) C.int {
	if won != contract.Inserted {
		return C.EPHPM_KV_EXISTS
	}
	*o.p = C.int64_t(fence)
	return C.EPHPM_KV_OK
}

// int64Out is a number in *p, written only with OK (incr_by).
type int64Out struct{ p *C.int64_t }

func outInt64(p *C.int64_t) int64Out { return int64Out{p} }

func (o int64Out) answer(n int64) C.int {
	*o.p = C.int64_t(n)
	return C.EPHPM_KV_OK
}

// ttlOut is a remaining TTL in *p in milliseconds, -1 for none, written
// only with OK (pttl).
type ttlOut struct{ p *C.int64_t }

func outTTL(p *C.int64_t) ttlOut { return ttlOut{p} }

// answer: OK with the TTL, or MISS.
func (o ttlOut) answer(left time.Duration, found bool) C.int {
	if !found {
		return C.EPHPM_KV_MISS
	}
	if left < 0 {
		*o.p = -1
	} else {
		// Round up: an entry with 0.4 ms left is still there.
		*o.p = C.int64_t((left + time.Millisecond - 1) / time.Millisecond)
	}
	return C.EPHPM_KV_OK
}

// holdersOut is who holds a lock: *mode and *holders, EXCLUSIVE and 0
// while free (lock_info).
type holdersOut struct {
	mode    *C.int32_t
	holders *C.int64_t
}

func outHolders(mode *C.int32_t, holders *C.int64_t) holdersOut {
	*mode, *holders = C.EPHPM_KV_LOCK_EXCLUSIVE, 0
	return holdersOut{mode, holders}
}

// answer: OK with the holders, or MISS when there are none.
func (o holdersOut) answer(mode contract.LockMode, holders int) C.int {
	if holders == 0 {
		return C.EPHPM_KV_MISS
	}
	*o.mode, *o.holders = C.int32_t(mode), C.int64_t(holders)
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

// fillStats is the stats member: the current backend's counters in *out,
// as much of them as the caller's struct has room for.
func fillStats(out *C.ephpm_kv_stats) error {
	b := current()
	st, err := b.Stats()
	if err != nil {
		return err
	}
	var full C.ephpm_kv_stats
	full.struct_size = out.struct_size
	setText(full.instance_id[:], st.InstanceID)
	setText(full.backend[:], b.Name())
	setText(full.eviction[:], st.Eviction)
	setText(full.compression[:], contract.CompressionName(st.Compression))
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
	setText(full.facts[:], st.Facts)
	full.rate_interval_ms = C.uint32_t(st.RateInterval / time.Millisecond)
	for i, r := range st.Rates[:min(len(st.Rates), len(full.rates))] {
		full.rates[i] = C.ephpm_kv_rate{hits: C.uint64_t(r.Hits), misses: C.uint64_t(r.Misses), sets: C.uint64_t(r.Sets),
			set_nx_wins: C.uint64_t(r.SetNXWins), set_nx_losses: C.uint64_t(r.SetNXLosses),
			evictions: C.uint64_t(r.Evictions), expirations: C.uint64_t(r.Expirations)}
		full.rate_count++
	}
	for i, sh := range st.Shards[:min(len(st.Shards), len(full.shard))] {
		full.shard[i] = C.ephpm_kv_shard{keys: C.int64_t(sh.Keys), bytes_used: C.int64_t(sh.BytesUsed),
			heap_size: C.int64_t(sh.HeapSize), heap_free: C.int64_t(sh.HeapFree), largest_free: C.int64_t(sh.LargestFree)}
		full.shard_count++
	}
	// Fill only what the caller's struct has room for.
	n := min(uintptr(out.struct_size), unsafe.Sizeof(full))
	copy(unsafe.Slice((*byte)(unsafe.Pointer(out)), n), unsafe.Slice((*byte)(unsafe.Pointer(&full)), n))
	return nil
}
