package memstore

import "github.com/ephpm/ephpm/contract"

// Fencing tokens. Every fenced grant of a lock name (a Step with Fenced,
// LockAttempt) carries a
// number strictly greater than that of every earlier grant of the name,
// minted under the shard lock that decides the grant. The numbers live
// beside the table, not in it: a lock's release, expiry or eviction, and
// Flush, leave them as they are.
//
// A shard remembers the latest fence of at most maxFencesPerShard names
// (about a million in the store), each by a 64-bit hash of the name: a map
// entry of two integers, whatever the name's length, outside the memory
// limit (about 40 MiB at most, measured in docs/measurements.md). Past
// that it forgets the oldest grant of a sample and raises its floor to
// that fence: a forgotten name's next grant continues above the floor,
// Fence reports the floor for it (a number no smaller than its latest
// grant), and a fence guard (GuardFence) refuses, since whether the fence given
// is still the latest is no longer known. Two names whose hashes are equal
// share one fence: each name's grants still increase, and a write may be
// refused. Forgetting never lowers a fence; it only refuses writes that
// might have been accepted.
var maxFencesPerShard = 4096 // a variable for tests

// fences is a shard's fencing state. Caller holds the shard lock.
type fences struct {
	latest map[uint64]int64
	floor  int64 // the largest fence forgotten in this shard
}

// fenceHash is name's key in its shard's fences: all of the name (locate
// hashes a session key by its sid alone).
func (s *Store) fenceHash(name string) uint64 { return s.seed.hash(name) }

// mint records a new grant of name and returns its fence. Caller holds
// sh.mu and has just granted name.
func (s *Store) mint(sh *shard, name string) int64 {
	f, h := &sh.fences, s.fenceHash(name)
	if n, ok := f.latest[h]; ok {
		n = max(n, f.floor) + 1
		f.latest[h] = n
		return n
	}
	if f.latest == nil {
		f.latest = make(map[uint64]int64)
	}
	if len(f.latest) >= maxFencesPerShard {
		f.forget()
	}
	n := f.floor + 1
	f.latest[h] = n
	return n
}

// forget drops the oldest grant (lowest fence) of up to 8 remembered
// names, a random sample (map order is random), and raises the floor to
// its fence. A held lock's grant is recent and seldom the lowest; if it is
// forgotten, its holder's fenced writes are refused.
func (f *fences) forget() {
	victim, low, seen := uint64(0), int64(0), 0
	for h, n := range f.latest {
		if seen == 0 || n < low {
			victim, low = h, n
		}
		if seen++; seen == 8 {
			break
		}
	}
	f.floor = max(f.floor, low)
	delete(f.latest, victim)
}

// current is the latest fence of the name hashing to h, the floor for a
// forgotten name, 0 for a name never granted. Caller holds the shard lock.
func (f *fences) current(h uint64) (n int64, known bool) {
	if n, ok := f.latest[h]; ok {
		return n, true
	}
	return f.floor, false
}

// Fence returns the latest fence granted for name: 0 if none was.
func (s *Store) Fence(name string) (int64, error) {
	if err := contract.CheckKey(name); err != nil {
		return 0, err
	}
	sh, _, _ := s.locate(name)
	sh.mu.Lock()
	n, _ := sh.fences.current(s.fenceHash(name))
	sh.mu.Unlock()
	return n, nil
}
