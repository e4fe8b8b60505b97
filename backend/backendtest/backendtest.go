// Package backendtest is the contract every backend.Backend must pass: the
// same assertions run against the in-process store and against Redis.
package backendtest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/internal/coarse"
)

// A Clock is the clock a backend keeps its TTL deadlines and expiry checks
// on, as this test process reads it. The contract times TTLs on it, so
// that it asserts what the backend promises and nothing of how this host's
// clocks drift against each other.
type Clock struct {
	// Now reads the clock, in nanoseconds from any fixed origin.
	Now func() int64
	// Resolution is how far the backend's deadlines may lie from the
	// instants Now gives: 0 when Now reads the backend's own clock.
	Resolution time.Duration
}

// Coarse is the clock of ephpm's own stores, the in-process store and the
// shared-memory segment: CLOCK_MONOTONIC_COARSE, read as they read it
// (internal/coarse).
var Coarse = Clock{Now: coarse.Now}

// ServerMillis is the clock of a Redis or Valkey server on this machine: it
// keeps deadlines in whole milliseconds of the machine's time.
var ServerMillis = Clock{Now: sinceStart, Resolution: time.Millisecond}

var start = time.Now()

func sinceStart() int64 { return int64(time.Since(start)) }

// hangCatch bounds the waits for what must come (a lapse, a wake-up, a
// grant): it only catches a hang, never the host's pace (a loaded host
// under the race detector runs a goroutine or a round trip seconds late).
const hangCatch = 2 * time.Minute

// Run runs the contract against the backend b, whose TTLs are kept on
// clock. Keys are prefixed by test name, so b may be shared with other
// tests.
func Run(t *testing.T, b backend.Backend, clock Clock) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, b, strings.ReplaceAll(t.Name(), "/", ":")+":", clock)
		})
	}
}

// cases are every group's cases, in order; scan.go and steps.go add
// theirs at init.
var cases = slices.Concat(basicContract, lockContract, batchContract, fenceContract, rwlockContract)
