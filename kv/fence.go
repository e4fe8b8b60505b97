package kv

import (
	"fmt"
	"sync"
	"time"
)

// Fencing tokens. Every grant of a lock name by SetNXFenced carries a
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
// grant), and SetFenced refuses its writes, since whether the fence given
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

// CheckFencedWrite is the limits on SetFenced's arguments, for every
// backend: those of a write, a lock name that is a key, and a fence that
// is positive, as a fenced grant returns it.
func CheckFencedWrite(key string, value []byte, ttl time.Duration, lock string, fence int64) error {
	if err := CheckWrite(key, value, ttl); err != nil {
		return err
	}
	if err := CheckKey(lock); err != nil {
		return err
	}
	if fence <= 0 {
		return fmt.Errorf("%w: fence %d is not positive (a fenced grant returns a positive number)", ErrInvalidArgument, fence)
	}
	return nil
}

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

// SetNXFenced is SetNX that also mints the grant's fence (see above) in the
// same step; the fence is 0 when the key was held.
func (s *Store) SetNXFenced(key string, value []byte, ttl time.Duration) (SetNXOutcome, int64, error) {
	if err := CheckWrite(key, value, ttl); err != nil {
		return 0, 0, err
	}
	var r writeReq
	r.key, r.value, r.flags, r.mode, r.ttl = key, value, flagPinned, modeSetNX, ttl
	r.mintFence = true
	s.prepare(&r)
	ok, err := s.install(&r)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return Exists, 0, nil
	}
	return Inserted, r.fence, nil
}

// Fence returns the latest fence granted for name: 0 if none was.
func (s *Store) Fence(name string) (int64, error) {
	if err := CheckKey(name); err != nil {
		return 0, err
	}
	sh, _, _ := s.locate(name)
	sh.mu.Lock()
	n, _ := sh.fences.current(s.fenceHash(name))
	sh.mu.Unlock()
	return n, nil
}

// SetFenced stores value under key, with a TTL as Set does, only while
// fence is still the latest grant of lock, and reports whether it did. The
// check and the write are one step (both shards are held): a holder whose
// lock expired and was granted to another cannot write over the new
// holder's work. Whether lock is still held does not matter, only whether
// it was granted again. On an error nothing changed.
func (s *Store) SetFenced(key string, value []byte, ttl time.Duration, lock string, fence int64) (bool, error) {
	return s.setFenced(key, value, ttl, lock, fence, nil, false)
}

// SetFencedToken is SetFenced for the holder of the grant's token: also
// refused while lock holds a live entry other than token, a holder whose
// grant minted no fence (set_nx, or a process with an older library). The
// checks and the write are one step.
func (s *Store) SetFencedToken(key string, value []byte, ttl time.Duration, lock string, fence int64, token []byte) (bool, error) {
	return s.setFenced(key, value, ttl, lock, fence, token, true)
}

func (s *Store) setFenced(key string, value []byte, ttl time.Duration, lock string, fence int64, token []byte, holder bool) (bool, error) {
	if err := CheckFencedWrite(key, value, ttl, lock, fence); err != nil {
		return false, err
	}
	var r writeReq
	r.key, r.value, r.flags, r.mode, r.ttl = key, value, s.pinFlag(key), modeFenced, ttl
	r.guardKey, r.fence = lock, fence
	r.guardToken, r.holder = token, holder
	s.prepare(&r)
	return s.install(&r)
}

// DelFencedToken is DelFenced for the holder of token, refused as
// SetFencedToken is.
func (s *Store) DelFencedToken(key, lock string, fence int64, token []byte) (bool, error) {
	return s.delFenced(key, lock, fence, token, true)
}

// heldByAnother reports whether lock holds a live entry other than token.
// Caller holds lock's shard (gsh) and the shard mutexes a and b, which it
// releases explicitly (see valueEqualsHeld; a nil: by a defer); nothing is
// removed.
func heldByAnother(gsh *shard, gh uint32, lock string, token []byte, c *clock, a, b *sync.Mutex) bool {
	g := gsh.t.get(gh, lock)
	return g != nil && !c.expired(g) && !valueEqualsHeld(g, token, a, b)
}

// DelFenced removes key only while fence is still the latest grant of
// lock, and reports whether the fence held (key is then absent, whether or
// not it held an entry). The check and the removal are one step (both
// shards are held). It fails only on an invalid argument, and then changes
// nothing.
func (s *Store) DelFenced(key, lock string, fence int64) (bool, error) {
	return s.delFenced(key, lock, fence, nil, false)
}

func (s *Store) delFenced(key, lock string, fence int64, token []byte, holder bool) (bool, error) {
	if err := CheckFencedWrite(key, nil, 0, lock, fence); err != nil {
		return false, err
	}
	return s.delIf(key, lock, func(gsh *shard, gh uint32, c *clock) bool {
		n, known := gsh.fences.current(s.fenceHash(lock))
		return known && n == fence && !(holder && heldByAnother(gsh, gh, lock, token, c, nil, nil))
	}), nil
}
