package shm

import (
	"fmt"
	"sync/atomic"
)

// Damage. The segment is a file that any process of its user can write:
// a stray write, a tool, a bad page can leave any bytes in it. What the
// write protocol leaves (a process killed at any instruction) recovery
// repairs; anything else must cost the shard it is in, never the process
// that meets it. So no offset or length read from the segment is used
// before it is checked, on every path, and every loop that follows links
// read from it is bounded:
//
//   - An offset into a shard's heap (an index slot's block, a free-list
//     link, the spare, a footer's step back, a block's size to the next)
//     must leave a whole block inside the heap; a block on a free list
//     must be free, the spare must be the spare; a walk of the heap
//     advances by at least minBlock, a walk of a free list stops after as
//     many blocks as the heap can hold.
//   - An entry's key and stored value must lie inside the heap (the
//     lock-free read checks the same, read.go), a compressed value must
//     have its length word and decompress to exactly that length.
//
// The checks are made by the accessors that decode those words, each on
// the one load it uses, so that a word changed between two reads (another
// process's stray write while the lock is held) cannot pass a check and be
// used unchecked. Everything else read from the segment is only compared
// or counted: a wrong count costs a wrong answer or a refused write, never
// a fault.
//
// A check that fails panics with a corruption, in place. The panic
// unwinds the call to its entry, releasing on the way every lock it holds:
// each lock is released by a deferred unlock of the function that took
// it, or, in a call that takes and releases locks in a loop (install,
// writeLoop, Wait), by catchHeld. The call's catch (catch,
// unlockKeyCatching or catchHeld) marks the shard broken (sBroken, as
// recovery marks a shard it cannot repair) and turns the corruption into
// the shard's error (corruptError), the one every later call on the shard
// gets from lock. A refused call therefore changes no shard that serves:
// what it may have changed is in the shard it found broken. The other
// shards' locks, and their calls, go on; the calls that go over every
// shard (eviction, the sweep of expired entries) leave a broken one out.
//
// Checks cost a compare and a branch on loads the paths make anyway, and
// the accessors inline as before. A lock word forged to name a live
// process is indistinguishable from that process holding the lock: its
// waiters wait for it, as for any live holder.

// corruption is the panic of a failed check (see above): what was found
// at heap offset at of sh, for a debugger; the call's error is the
// shard's. It is raised in place, with sh's lock held (an accessor that
// called out of line to mark the shard would no longer inline).
type corruption struct {
	sh   *shard
	what string
	at   int64
}

// corruptError is the error of every call on a shard marked broken.
func (s *Store) corruptError(i int) error {
	return fmt.Errorf("%w: shard %d of %s: stop the processes using it and remove the file", ErrCorrupt, i, s.g.path)
}

// caught is the error of a call that recovered r: for a corruption, the
// shard is marked broken (sBroken, as recovery marks a shard it cannot
// repair) and the error is its; nil for nil; any other panic goes on.
func (s *Store) caught(r any) error {
	if r == nil {
		return nil
	}
	c, ok := r.(corruption)
	if !ok {
		panic(r)
	}
	atomic.StoreUint32(c.sh.u32(sBroken), 1)
	if markedBroken != nil {
		markedBroken(s, c.sh)
	}
	return s.corruptError(c.sh.i)
}

// markedBroken, when not nil, is called by caught just after it marks a
// shard broken, before the call releases anything: a test seam, for tests
// that assert which locks the call still holds then. It is nil outside
// tests; a test that sets it restores nil before it ends.
var markedBroken func(s *Store, sh *shard)

// catch is deferred by a call whose locks are released by deferred
// unlocks: a corruption that unwinds it becomes its error. Deferred after
// the unlock, it runs before it: the shard is marked broken while the
// call still holds it.
func (s *Store) catch(err *error) {
	if r := recover(); r != nil {
		*err = s.caught(r)
	}
}

// unlockKeyCatching is unlockKey and catch in one deferred call, for a
// call on one key that holds its shard's lock to its end: a corruption
// that unwinds it marks the shard broken and becomes its error, then the
// lock is released.
func (s *Store) unlockKeyCatching(sh *shard, tk *ticket, err *error) {
	if r := recover(); r != nil {
		defer s.unlockKey(sh, tk) // once the shard is marked broken; for another panic too
		*err = s.caught(r)
		return
	}
	s.unlockKey(sh, tk)
}

// catchHeld is catch for a call that takes and releases the locks of a
// and b (b may be a) itself, held saying whether it holds them now: a
// corruption found under them releases them. It recovers nothing while
// held is false, so that a call's return costs no recover.
func (s *Store) catchHeld(a, b *shard, held *bool, err *error) {
	if !*held {
		return
	}
	r := recover()
	*held = false
	defer s.unlockTwo(a, b) // once the shard is marked broken; for another panic too
	*err = s.caught(r)
}

// inShard runs f with sh locked and returns nil, or sh's corrupt error if
// sh is broken or f found it corrupt (its lock released either way).
func (s *Store) inShard(sh *shard, f func()) (err error) {
	if err := s.lock(sh); err != nil {
		return err
	}
	defer s.unlock(sh)
	defer s.catch(&err)
	f()
	return nil
}

// isBroken reports whether sh is marked broken: a look with no lock, for
// the calls that go over every shard and leave a broken one out.
func (sh *shard) isBroken() bool { return atomic.LoadUint32(sh.u32(sBroken)) != 0 }

// blockOf is the block an index slot's value v (a live one) refers to,
// checked to leave a whole block inside the heap. Caller holds the lock.
func (sh *shard) blockOf(v uint64) int64 {
	b := slotBlock(v)
	if b+minBlock > sh.heapSize {
		panic(corruption{sh, "an index slot points outside the heap", b})
	}
	return b
}

// linked is the block a free-list link or the spare word v names (noBlock
// for 0), checked as blockOf checks. Caller holds the lock.
func (sh *shard) linked(v uint32) int64 {
	b := unlink(v)
	if b+minBlock > sh.heapSize {
		panic(corruption{sh, "a free-list link points outside the heap", b})
	}
	return b
}

// listed returns the size of b, the n-th block met on a free list, which
// must be free; a list longer than the heap has blocks loops.
func (sh *shard) listed(b int64, n int) int64 {
	size, st, _ := sh.header(b)
	if st != stateFree || int64(n) > sh.heapSize/minBlock {
		panic(corruption{sh, "a free list holds a block that is not free, or loops", b})
	}
	return size
}

// nextListed is the block after b on its free list.
func (sh *shard) nextListed(b int64) int64 { return sh.linked(atomic.LoadUint32(sh.nextFree(b))) }
