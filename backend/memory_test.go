package backend_test

import (
	"testing"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/memstore"
)

func TestMemoryPassesTheContract(t *testing.T) {
	s := memstore.New(memstore.Options{})
	defer s.Close()
	backendtest.Run(t, backend.Memory{Store: s}, backendtest.Coarse)
}

// A store keeps its TTLs on its own clock, however that clock lags the
// precise one: here a coarse clock as a loaded VM may keep it, stepping
// every 4 ms with each step 0, 1.9 or 3.8 ms late, 3 to 10.8 ms behind
// CLOCK_MONOTONIC. Against the precise clock its entries live their TTL
// give or take more than a step: the contract times them on the store's
// clock.
func TestMemoryPassesTheContractOnALaggingClock(t *testing.T) {
	clock := backendtest.Clock{Now: laggingClock()}
	s := memstore.New(memstore.Options{Now: clock.Now})
	defer s.Close()
	backendtest.Run(t, backend.Memory{Store: s}, clock)
}

func laggingClock() func() int64 {
	const step, lag = int64(4 * time.Millisecond), int64(3 * time.Millisecond)
	start := time.Now()
	return func() int64 {
		t := int64(time.Since(start)) - lag
		k := t / step
		// Step k shows from k*step plus its lateness on.
		if t < k*step+k%3*int64(1900*time.Microsecond) {
			k--
		}
		return k * step
	}
}
