package shm

//go:noescape
func storeRel64(p *uint64, v uint64)

//go:noescape
func storeRel32(p *uint32, v uint32)

// cpuRelax is the PAUSE instruction: a spin-wait hint.
func cpuRelax()
