//go:build !amd64

package coarse

const hasVDSOCall = false

func vdsoCoarse(uintptr) (int64, bool) { return 0, false }
