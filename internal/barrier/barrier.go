// Package barrier releases goroutines together, for tests in which many
// callers must really race (the invariants say: released together at a
// barrier, not staggered by sleeps).
package barrier

import (
	"sync"
	"sync/atomic"
)

// Race starts n goroutines, releases them together once all are running,
// waits for all of them, and returns how many saw f report true.
func Race(n int, f func(i int) bool) int {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	var wins atomic.Int32
	ready.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		go func(i int) {
			defer done.Done()
			ready.Done()
			<-start
			if f(i) {
				wins.Add(1)
			}
		}(i)
	}
	ready.Wait()
	close(start)
	done.Wait()
	return int(wins.Load())
}
