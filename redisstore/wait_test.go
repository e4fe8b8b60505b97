package redisstore

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/internal/redistest"
)

// The hub's pub/sub reader runs in the background for the life of the
// process; it must wait for messages without holding a P, or with one P
// (a container limited to one CPU) every PHP call and timer waits behind
// it. Measured as the time a 1 ms sleep takes right after a release was
// published, when the reader has the message to deliver and then waits
// for the next one.
func TestHubReaderDoesNotHoldAP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	var sleeps []time.Duration
	for i := 0; i < 15; i++ {
		require.NoError(t, s.Set("w", []byte("held"), 0))
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.Wait("w", 5*time.Second)
		}()
		require.Eventually(t, func() bool {
			n, err := s.c.PubSubNumSub(ctx, releaseChannel("w")).Result()
			return err == nil && n[releaseChannel("w")] == 1
		}, 5*time.Second, time.Millisecond)
		_, err := s.Del("w") // publishes: the reader delivers it, then waits again
		require.NoError(t, err)
		start := time.Now()
		time.Sleep(time.Millisecond)
		sleeps = append(sleeps, time.Since(start))
		<-done
	}
	slices.Sort(sleeps)
	assert.Less(t, sleeps[len(sleeps)/2], 5*time.Millisecond, "sorted: %v", sleeps)
}
