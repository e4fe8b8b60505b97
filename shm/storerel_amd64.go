package shm

//go:noescape
func storeRel64(p *uint64, v uint64)

//go:noescape
func storeRel32(p *uint32, v uint32)

func storeDerived64(p *uint64, v uint64) { *p = v }
func storeDerived32(p *uint32, v uint32) { *p = v }

// readsWithoutLock: x86-TSO orders loads with loads and stores with stores,
// which read.go's reads with no lock rely on.
const readsWithoutLock = true

// cpuRelax is the PAUSE instruction: a spin-wait hint.
func cpuRelax()
