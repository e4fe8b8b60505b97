package coarse

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestNowIsTheKernelsCoarseClock(t *testing.T) {
	if !FromVDSO() {
		if hasVDSOCall && findVDSO() != 0 {
			t.Fatal("this process has a vDSO with clock_gettime, but Now does not use it")
		}
		t.Skip("no usable vDSO: Now reads CLOCK_MONOTONIC")
	}
	for range 1000 {
		a := syscallNow()
		n := Now()
		b := syscallNow()
		if n < a || n > b {
			t.Fatalf("Now() = %d, not between the kernel's %d and %d", n, a, b)
		}
	}
}

// Now is never ahead of CLOCK_MONOTONIC. How far it lags is not bounded
// by the kernel (more than a tick on some VMs, and a reader the host
// deschedules between the two reads adds its stall), so it is not
// asserted.
func TestNowIsNotAheadOfTheFineClock(t *testing.T) {
	res := Resolution()
	if res <= 0 || res > int64(100*time.Millisecond) {
		t.Fatalf("Resolution() = %d ns", res)
	}
	var ts unix.Timespec
	for range 1000 {
		n := Now()
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		if fine := ts.Nano(); n > fine {
			t.Fatalf("coarse %d ahead of fine %d (tick %d ns)", n, fine, res)
		}
	}
}

func TestNowAdvances(t *testing.T) {
	a := Now()
	time.Sleep(time.Duration(3 * Resolution()))
	if b := Now(); b <= a {
		t.Fatalf("Now() did not advance in three ticks: %d then %d", a, b)
	}
}

// The stub on goroutines of every stack depth, many at once.
func TestNowFromManyGoroutines(t *testing.T) {
	done := make(chan int64)
	var deep func(int) int64
	deep = func(d int) int64 {
		if d == 0 {
			return Now()
		}
		return deep(d-1) + 0
	}
	for g := range 64 {
		go func() { done <- deep(g * 10) }()
	}
	for range 64 {
		if n := <-done; n <= 0 {
			t.Fatalf("Now() = %d", n)
		}
	}
}

func BenchmarkNow(b *testing.B) {
	for b.Loop() {
		Now()
	}
}

func BenchmarkSyscall(b *testing.B) {
	for b.Loop() {
		syscallNow()
	}
}

func BenchmarkFine(b *testing.B) {
	for b.Loop() {
		nanotime()
	}
}
