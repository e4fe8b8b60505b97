#include "textflag.h"

// func vdsoCall(fn uintptr) (ns int64, rc int64)
//
// Calls the C function clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) at fn on
// this function's own frame: 8 KiB, which the stack check in the prologue
// guarantees (no NOSPLIT), so the C code and any stack probe it makes stay
// inside the goroutine's stack. The C code follows the System V ABI: it
// keeps RBX, RBP and R12-R15 and wants SP 16-byte aligned at the call.
// Go does not preempt assembly asynchronously, and a signal runs on the
// signal stack, so nothing moves this stack while the C code runs.
TEXT ·vdsoCall(SB), 0, $8192-24
	MOVQ fn+0(FP), AX
	MOVQ SP, R12          // restored after the call; C keeps R12
	LEAQ 8064(SP), SP     // the C code's stack grows down into the frame
	ANDQ $~15, SP
	SUBQ $16, SP          // struct timespec
	MOVL $6, DI           // CLOCK_MONOTONIC_COARSE
	MOVQ SP, SI
	CALL AX
	MOVQ 0(SP), CX        // tv_sec
	MOVQ 8(SP), DX        // tv_nsec
	MOVQ R12, SP
	MOVQ AX, rc+16(FP)
	IMULQ $1000000000, CX
	ADDQ DX, CX
	MOVQ CX, ns+8(FP)
	RET
