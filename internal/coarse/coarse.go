// Package coarse reads CLOCK_MONOTONIC_COARSE: the kernel's monotonic time
// as of its last tick (1-4 ms on Linux), the same clock in every process
// of the machine. Its read is a few loads from the vDSO's data page, which
// costs a fraction of a CLOCK_MONOTONIC read (that one reads the TSC and
// scales it). The stores keep TTL deadlines and expiry checks on it: a TTL
// is kept exactly on this clock. Its lag behind CLOCK_MONOTONIC is not
// bounded by the kernel: up to a tick where ticks come on time, more than
// a tick on some VMs (docs/measurements.md, "Figures moved out of code
// comments").
package coarse

import (
	"bytes"
	"debug/elf"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// atSysinfoEhdr is the auxiliary vector's tag for the vDSO's address.
const atSysinfoEhdr = 33

// clockGettime is the address of the vDSO's __vdso_clock_gettime, 0 if this
// process has none that passed init's check.
var clockGettime uintptr

// Now returns CLOCK_MONOTONIC_COARSE in nanoseconds. Without a usable vDSO
// it returns CLOCK_MONOTONIC (Go's runtime clock), which is ahead of the
// coarse clock: cheaper than a system call, and as good a deadline.
func Now() int64 {
	if fn := clockGettime; fn != 0 {
		if t, ok := vdsoCoarse(fn); ok {
			return t
		}
	}
	return nanotime()
}

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Resolution is the clock's resolution (the kernel's tick), as the kernel
// reports it.
func Resolution() int64 {
	var ts unix.Timespec
	if unix.ClockGetres(unix.CLOCK_MONOTONIC_COARSE, &ts) != nil {
		return 4_000_000
	}
	return ts.Nano()
}

// FromVDSO reports whether Now reads the coarse clock through the vDSO
// (false: it reads CLOCK_MONOTONIC).
func FromVDSO() bool { return clockGettime != 0 }

func syscallNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_COARSE, &ts); err != nil {
		panic("coarse: clock_gettime(CLOCK_MONOTONIC_COARSE): " + err.Error())
	}
	return ts.Nano()
}

func init() {
	fn := findVDSO()
	if fn == 0 || !hasVDSOCall {
		return
	}
	// The vDSO's answer must lie between two of the kernel's, every time.
	for range 3 {
		a := syscallNow()
		t, ok := vdsoCoarse(fn)
		b := syscallNow()
		if !ok || t < a || t > b {
			return
		}
	}
	clockGettime = fn
}

// findVDSO returns the address of __vdso_clock_gettime in this process's
// vDSO (AT_SYSINFO_EHDR in the auxiliary vector), 0 if it finds none.
func findVDSO() uintptr {
	base := auxv(atSysinfoEhdr)
	if base == 0 {
		return 0
	}
	size := mappingSize(base)
	if size == 0 {
		return 0
	}
	image := mapped(base, size)
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		return 0
	}
	// The image is mapped from its first PT_LOAD's virtual address.
	var first uint64
	found := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			first, found = p.Vaddr-p.Off, true
			break
		}
	}
	if !found {
		return 0
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return 0
	}
	for _, s := range syms {
		if s.Name == "__vdso_clock_gettime" && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value > first {
			return base + uintptr(s.Value-first)
		}
	}
	return 0
}

// mapped returns the size bytes at base, memory outside Go's heap that
// stays mapped for the life of the process.
func mapped(base uintptr, size int) []byte {
	var b []byte
	h := (*struct {
		data      uintptr
		len, cap_ int
	})(unsafe.Pointer(&b))
	h.data, h.len, h.cap_ = base, size, size
	return b
}

// auxv returns the value of tag in /proc/self/auxv, 0 if absent.
func auxv(tag uint64) uintptr {
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 0
	}
	const w = int(unsafe.Sizeof(uintptr(0)))
	for i := 0; i+2*w <= len(b); i += 2 * w {
		k := *(*uintptr)(unsafe.Pointer(&b[i]))
		v := *(*uintptr)(unsafe.Pointer(&b[i+w]))
		if uint64(k) == tag {
			return v
		}
		if k == 0 {
			break
		}
	}
	return 0
}

// mappingSize returns the length of the mapping of /proc/self/maps that
// starts at base, 0 if none does.
func mappingSize(base uintptr) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		lo, rest, ok := strings.Cut(line, "-")
		if !ok {
			continue
		}
		hi, _, _ := strings.Cut(rest, " ")
		l, err1 := strconv.ParseUint(lo, 16, 64)
		h, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && uintptr(l) == base && h > l {
			return int(h - l)
		}
	}
	return 0
}
