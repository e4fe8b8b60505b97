#include "textflag.h"

// func storeRel64(p *uint64, v uint64)
TEXT ·storeRel64(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET

// func storeRel32(p *uint32, v uint32)
TEXT ·storeRel32(SB), NOSPLIT, $0-12
	MOVQ p+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, (AX)
	RET

// func cpuRelax()
TEXT ·cpuRelax(SB), NOSPLIT, $0-0
	PAUSE
	RET
