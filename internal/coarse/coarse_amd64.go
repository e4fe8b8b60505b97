package coarse

const hasVDSOCall = true

// vdsoCall calls the vDSO's clock_gettime(CLOCK_MONOTONIC_COARSE) at fn and
// returns its result in ns and whether it succeeded. It runs the C code on
// its own frame, which is large enough for it (see coarse_amd64.s).
//
//go:noescape
func vdsoCall(fn uintptr) (ns int64, rc int64)

func vdsoCoarse(fn uintptr) (int64, bool) {
	ns, rc := vdsoCall(fn)
	return ns, rc == 0
}
