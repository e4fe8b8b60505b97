package bridge

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include "ephpm_kv.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/ephpm/ephpm/contract"
)

// args.go turns a member's C arguments into Go values, for the exports
// (exports_gen.go), which convert each argument by the Go type of the
// parameter it becomes: a key, a value, a duration, batch records, the
// caller's output buffer. Each export borrows the caller's buffers for the
// duration of the call only: keys are viewed, not copied (the store copies
// what it keeps).

// args turns one call's C arguments into Go values and keeps the first
// rejection, which the member reports through failure, so that last_error
// says why. The limits are contract's (CheckKey, CheckValue, CheckTTL), the one
// authority every backend shares; args adds only what Go itself needs: no
// length beyond an int, no duration beyond a time.Duration.
type args struct{ err error }

func (a *args) reject(err error) {
	if a.err == nil {
		a.err = err
	}
}

// key, bytes and duration are small enough to inline: a length or TTL that
// contract accepts takes the inlined path, and any other goes to their checked
// form, where contract's check (or Go's own limit) decides and says why.

// key views a key of n bytes at p.
func (a *args) key(p *C.char, n C.size_t) string {
	if n-1 < contract.MaxKeyLen { // 1..MaxKeyLen: contract.CheckKey accepts it
		return unsafe.String((*byte)(unsafe.Pointer(p)), int(n))
	}
	return a.checkedKey(p, n)
}

func (a *args) checkedKey(p *C.char, n C.size_t) string {
	k := unsafe.String((*byte)(unsafe.Pointer(p)), a.length(n))
	if err := contract.CheckKey(k); err != nil {
		a.reject(err)
	}
	return k
}

// bytes views a value (or token) of n bytes at p.
func (a *args) bytes(p *C.char, n C.size_t) []byte {
	if n-1 < contract.MaxValueLen { // 1..MaxValueLen: contract.CheckValue accepts it
		return unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n))
	}
	return a.checkedBytes(p, n)
}

func (a *args) checkedBytes(p *C.char, n C.size_t) []byte {
	if n == 0 {
		return []byte{}
	}
	v := unsafe.Slice((*byte)(unsafe.Pointer(p)), a.length(n))
	if err := contract.CheckValue(v); err != nil {
		a.reject(err)
	}
	return v
}

// duration is ms milliseconds: a TTL, or how long a call may wait.
func (a *args) duration(ms C.int64_t) time.Duration {
	if uint64(ms) <= uint64(contract.MaxTTL/time.Millisecond) { // contract.CheckTTL accepts it
		return time.Duration(ms) * time.Millisecond
	}
	return a.checkedDuration(ms)
}

func (a *args) checkedDuration(ms C.int64_t) time.Duration {
	// Beyond what a time.Duration holds either way: the product would wrap
	// (a very negative ms into a valid TTL).
	if int64(ms) > math.MaxInt64/int64(time.Millisecond) || int64(ms) < math.MinInt64/int64(time.Millisecond) {
		a.reject(fmt.Errorf("%w: %d ms is beyond %v", contract.ErrInvalidArgument, int64(ms), contract.MaxTTL))
		return 0
	}
	d := time.Duration(ms) * time.Millisecond
	if err := contract.CheckTTL(d); err != nil {
		a.reject(err)
	}
	return d
}

// length is n as an int, if no argument can be that long.
func (a *args) length(n C.size_t) int {
	if uint64(n) > math.MaxInt32 {
		a.reject(fmt.Errorf("%w: a length of %d bytes", contract.ErrInvalidArgument, uint64(n)))
		return 0
	}
	return int(n)
}

// batch views the records of a batch buffer of n bytes at p (include/
// ephpm_kv.h, "Batch records"), count entries of perEntry records each,
// and hands each record to add in turn, viewed, not copied. It rejects,
// saying why, a count the buffer cannot hold and records that do not fill
// it exactly.
func (a *args) batch(p *C.char, n, count C.size_t, perEntry int, add func(rec []byte)) {
	if uint64(n) > math.MaxInt {
		a.reject(fmt.Errorf("%w: a batch of %d bytes", contract.ErrInvalidArgument, uint64(n)))
		return
	}
	if uint64(count) > uint64(n)/uint64(4*perEntry) {
		a.reject(fmt.Errorf("%w: %d batch entries cannot fit in %d bytes", contract.ErrInvalidArgument, uint64(count), uint64(n)))
		return
	}
	var buf []byte
	if n > 0 {
		buf = unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n))
	}
	for i := 0; i < int(count)*perEntry; i++ {
		if len(buf) < 4 {
			a.reject(fmt.Errorf("%w: batch record %d is cut short", contract.ErrInvalidArgument, i))
			return
		}
		rn := binary.NativeEndian.Uint32(buf)
		if uint64(rn) > uint64(len(buf)-4) {
			a.reject(fmt.Errorf("%w: batch record %d says %d bytes, %d are left", contract.ErrInvalidArgument, i, rn, len(buf)-4))
			return
		}
		add(buf[4 : 4+rn])
		buf = buf[4+rn:]
	}
	if len(buf) != 0 {
		a.reject(fmt.Errorf("%w: %d bytes after the last of %d batch records", contract.ErrInvalidArgument, len(buf), int(count)*perEntry))
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

// keyBatch reads the key records of a batch (get_many's keys) into l.keys,
// checking each key as contract.CheckKey does.
func (a *args) keyBatch(l *batchList, p *C.char, n, count C.size_t) {
	a.batch(p, n, count, 1, func(k []byte) {
		key := asString(k)
		if err := contract.CheckKey(key); err != nil {
			a.reject(fmt.Errorf("batch key %d: %w", len(l.keys), err))
		}
		l.keys = append(l.keys, key)
	})
}

// entryBatch reads the key and value records of a batch (set_many's
// entries) into l.keys and l.values; the backend checks them
// (backend.CheckBatch).
func (a *args) entryBatch(l *batchList, p *C.char, n, count C.size_t) {
	a.batch(p, n, count, 2, func(rec []byte) {
		if len(l.keys) == len(l.values) {
			l.keys = append(l.keys, asString(rec))
		} else {
			l.values = append(l.values, rec)
		}
	})
}

// capacity refuses a batch's output buffer larger than an int: the length
// its records need is compared with it as one.
func (a *args) capacity(n C.size_t) {
	if uint64(n) > math.MaxInt {
		a.reject(fmt.Errorf("%w: a buffer of %d bytes", contract.ErrInvalidArgument, uint64(n)))
	}
}

// view is the caller's output buffer of n bytes at p (nil when empty).
func view(p *C.char, n C.size_t) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n))
}
