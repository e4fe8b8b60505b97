package bridge

/*
#include "ephpm_kv.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/lockwait"
)

// The step member: one ephpm_kv_step crosses as a backend.Step, an
// acquire's wait is lockwait's loop over the step's attempts, and the
// outputs go back into the caller's struct (include/ephpm_kv.h says what
// each field and answer means).

// stepAnswer is a step's status when it did not fail: OK, TOO_SMALL,
// EXISTS or MISS.
type stepAnswer C.int

// stepped is the status a step answers.
func stepped(a stepAnswer) C.int { return C.int(a) }

// The flags this header defines; any other is refused.
const stepFlags = C.EPHPM_KV_STEP_ACQUIRE | C.EPHPM_KV_STEP_FENCED | C.EPHPM_KV_STEP_BOUND | C.EPHPM_KV_STEP_RELEASE

// span views n bytes at p as a key or value of a step: a NULL p is refused
// unless n is 0 (the header's buffer rule), and the limits are left to
// contract.CheckStep, which checks each part the step uses.
func span(a *args, what string, p *C.char, n C.size_t) []byte {
	switch {
	case n == 0:
		return nil
	case p == nil:
		a.reject(fmt.Errorf("%w: step: %s is NULL with a length of %d", contract.ErrInvalidArgument, what, uint64(n)))
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), a.length(n))
}

// stepCall is the step member. It reads only the fields of this header's
// ephpm_kv_step (a caller's struct may be larger, never smaller) and
// writes every output before it answers, whatever the outcome.
func stepCall(req *C.ephpm_kv_step) (stepAnswer, error) {
	if req.struct_size < C.sizeof_ephpm_kv_step {
		return 0, fmt.Errorf("%w: step: struct_size %d is smaller than ephpm_kv_step (%d bytes)",
			contract.ErrInvalidArgument, uint32(req.struct_size), C.sizeof_ephpm_kv_step)
	}
	acquire := req.flags&C.EPHPM_KV_STEP_ACQUIRE != 0
	req.len, req.result = 0, 0
	fenceIn := int64(req.fence)
	if acquire {
		req.fence = 0
	}
	if req.flags&^stepFlags != 0 {
		return 0, fmt.Errorf("%w: step: unknown flags %#x", contract.ErrInvalidArgument, uint32(req.flags&^stepFlags))
	}

	var a args
	var s backend.Step
	s.Acquire = acquire
	s.Fenced = req.flags&C.EPHPM_KV_STEP_FENCED != 0
	s.Bound = req.flags&C.EPHPM_KV_STEP_BOUND != 0
	s.Release = req.flags&C.EPHPM_KV_STEP_RELEASE != 0
	if req.guard < 0 || req.guard > 255 || req.action < 0 || req.action > 255 {
		return 0, fmt.Errorf("%w: step: guard %d or action %d is unknown", contract.ErrInvalidArgument, int32(req.guard), int32(req.action))
	}
	s.Guard, s.Action = backend.Guard(req.guard), backend.Action(req.action) // CheckStep refuses those it does not know
	// A field the step does not use is not read: a struct may be reused
	// with an old key in it.
	if s.Acquire || s.Guard != backend.GuardNone || s.Release {
		s.Lock = asString(span(&a, "lock", req.lock, req.lock_len))
		s.Token = span(&a, "token", req.token, req.token_len)
		s.Fence = fenceIn
	}
	var wait time.Duration
	if s.Acquire {
		s.LockTTL = a.duration(req.lock_ttl_ms)
		wait = a.duration(req.wait_ms)
	} else if req.wait_ms != 0 {
		a.reject(fmt.Errorf("%w: step: wait_ms belongs to a step that acquires its lock", contract.ErrInvalidArgument))
	}
	if s.Action != backend.ActionNone {
		s.Key = asString(span(&a, "key", req.key, req.key_len))
	}
	switch s.Action {
	case backend.ActionSet:
		s.Value = span(&a, "value", req.value, req.value_len)
		s.TTL = a.duration(req.ttl_ms)
	case backend.ActionExpire:
		s.TTL = a.duration(req.ttl_ms)
	case backend.ActionGet:
		if req.buf == nil && req.buf_cap != 0 {
			a.reject(fmt.Errorf("%w: step: buf is NULL with a capacity of %d", contract.ErrInvalidArgument, uint64(req.buf_cap)))
		}
		// No value is longer than contract.MaxValueLen: a larger buffer is used
		// up to that (and a size_t past an int never becomes one).
		s.Dst = view(req.buf, min(req.buf_cap, C.size_t(contract.MaxValueLen)))
	}
	if a.err != nil {
		return 0, a.err
	}
	if err := contract.CheckStep(&s); err != nil {
		return 0, err
	}

	b := current()
	var err error
	if acquire {
		locker := lockwait.Locker{Store: b}
		var res lockwait.Result
		res, err = locker.AcquireStep(b, &s, wait)
		if err == nil && !res.Acquired {
			lockTimeouts.Add(1)
		}
	} else {
		err = backend.Run(b, &s)
	}
	if err != nil {
		return 0, err
	}

	if s.Held {
		req.result |= C.EPHPM_KV_STEP_HELD
	}
	if s.Done {
		req.result |= C.EPHPM_KV_STEP_DONE
	}
	if s.Found {
		req.result |= C.EPHPM_KV_STEP_FOUND
	}
	if s.Released {
		req.result |= C.EPHPM_KV_STEP_RELEASED
	}
	if acquire {
		req.fence = C.int64_t(s.Fence)
	}
	switch {
	case acquire && !s.Held:
		return C.EPHPM_KV_EXISTS, nil
	case !s.Held:
		return C.EPHPM_KV_MISS, nil
	case s.Action == backend.ActionGet:
		req.len = C.size_t(s.N)
		if s.Found && s.N > len(s.Dst) {
			return C.EPHPM_KV_TOO_SMALL, nil
		}
	}
	return C.EPHPM_KV_OK, nil
}
