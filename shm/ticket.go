// The ticket: how a call keeps the segment mapped while it uses it, and how
// Close learns that no call does.

package shm

import "runtime"

// A ticket stands for the mapping's use by this process's calls: each call
// takes the Store's current one and keeps it reachable until it no longer
// touches the mapping (runtime.KeepAlive in leave). Close removes it from
// the Store; the collector then tells, by running the ticket's cleanup,
// that no call holds it: no call is in progress, and none can start. This
// costs a call one plain load (no locked instruction: an atomic add on
// every call would be two of the few a call needs), and Close one or more
// collections, which is rare (a backend is chosen once per process).
type ticket struct {
	// done is closed by the cleanup once the ticket is unreachable. (A
	// pointer also keeps the ticket out of the tiny allocator, whose
	// blocks share a lifetime with their neighbours.)
	done chan struct{}
}

func newTicket() *ticket {
	tk := &ticket{done: make(chan struct{})}
	runtime.AddCleanup(tk, func(done chan struct{}) { close(done) }, tk.done)
	return tk
}

// enter begins a call: it returns the ticket the call holds until leave,
// or fails if the store is closed.
func (s *Store) enter() (*ticket, error) {
	tk := s.ticket.Load()
	if tk == nil {
		return nil, errClosed
	}
	return tk, nil
}

// leave ends the call that entered with tk: until it returns, tk is
// reachable, so Close does not unmap the segment.
func (s *Store) leave(tk *ticket) { runtime.KeepAlive(tk) }
