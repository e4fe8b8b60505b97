// Package stackdepth runs a test's check at every depth of a new
// goroutine's stack, for code that holds an address as a uintptr: at one
// of the depths a call in it grows the stack and moves it, and a uintptr
// is not adjusted when a stack moves.
package stackdepth

import "testing"

// descend calls leaf d small frames down a goroutine's stack, so that a
// sweep of d puts leaf's calls at every offset from the stack's limit.
//
//go:noinline
func descend(d int, leaf func() bool) bool {
	if d > 0 {
		return descend(d-1, leaf)
	}
	return leaf()
}

// Sweep runs leaf on a new goroutine at each depth from 0 to 1999 small
// frames, and fails the test at the first depth at which leaf reports
// false, saying what it checked.
func Sweep(t testing.TB, what string, leaf func() bool) {
	t.Helper()
	for d := range 2000 {
		ok := make(chan bool)
		go func() { ok <- descend(d, leaf) }()
		if !<-ok {
			t.Fatalf("depth %d: %s was not the caller's after its stack moved", d, what)
		}
	}
}
