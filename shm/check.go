package shm

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ephpm/ephpm/contract"
)

// Check walks every shard, under its lock (so a shard whose owner died is
// recovered first), and returns an error naming each inconsistency it
// finds: a heap whose block sizes do not tile it, an in-flight block (none
// may exist outside a locked shard), a spare block other than the one the
// shard names, adjacent free blocks, a wrong prevFree
// bit or footer, a free list that does not hold exactly the free blocks of
// its class, an index slot that does not point at a live block whose key
// hashes to it along an unbroken probe path, a live block no slot refers to
// or two slots refer to, or a derived count that differs from what the
// walk finds (among them the session data's bytes and each eviction
// class's). A shard that is broken, or that it finds too damaged to walk
// (checked.go: then it marks it broken), is named with its corrupt error.
// It is for tests and diagnostics: it holds each shard for a walk of its
// whole heap and index.
func (s *Store) Check() error {
	tk, err := s.enter()
	if err != nil {
		return err
	}
	defer s.leave(tk)
	var errs []error
	for i := range s.shards {
		sh := &s.shards[i]
		var found error
		if err := s.inShard(sh, func() { found = s.checkShard(sh) }); err != nil {
			errs = append(errs, err)
		} else if found != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", i, found))
		}
	}
	return errors.Join(errs...)
}

func (s *Store) checkShard(sh *shard) error {
	starts, err := sh.walk()
	if err != nil {
		return err
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	// The heap.
	free := map[int64]bool{}
	var f figures
	prevFree := false
	spare, spareSeen := unlink(atomic.LoadUint32(sh.spare())), false
	for b := int64(0); b < s.g.heapSize; {
		size, st, pf := sh.header(b)
		if pf != prevFree {
			fail("block %d: prevFree bit %v, the block before is free: %v", b, pf, prevFree)
		}
		switch st {
		case stateFree:
			if prevFree {
				fail("block %d: free after a free block", b)
			}
			if foot := int64(atomic.LoadUint64(sh.hu64(b + size - 8))); foot != size {
				fail("free block %d: footer %d, size %d", b, foot, size)
			}
			free[b] = true
		case stateLive:
		case stateSpare:
			if b != spare {
				fail("block %d: a spare, but the shard's spare is %d", b, spare)
			}
			spareSeen = spareSeen || b == spare
			f.heapUsed += size
		default:
			fail("block %d: state %d outside a locked shard", b, st)
		}
		prevFree = st == stateFree
		b += size
	}
	if spare != noBlock && !spareSeen {
		fail("the shard's spare %d is not a spare block", spare)
	}
	// The free lists.
	listed := 0
	for c := 0; c < nClasses; c++ {
		if set, held := atomic.LoadUint32(sh.freeMap())&(1<<c) != 0, atomic.LoadUint32(sh.listHead(c)) != 0; set != held {
			fail("free list %d: bit %v in the free map, list not empty %v", c, set, held)
		}
		prev := int64(noBlock)
		for b := unlink(atomic.LoadUint32(sh.listHead(c))); b != noBlock; b = unlink(atomic.LoadUint32(sh.nextFree(b))) {
			if !free[b] {
				fail("free list %d holds %d, not a free block (or twice)", c, b)
				break
			}
			delete(free, b)
			listed++
			if sizeClass(sh.blockSize(b)) != c {
				fail("free list %d holds block %d of %d bytes", c, b, sh.blockSize(b))
			}
			if p := unlink(atomic.LoadUint32(sh.prevFreeLink(b))); p != prev {
				fail("free block %d: back link %d, not %d", b, p, prev)
			}
			prev = b
		}
	}
	if len(free) != 0 {
		fail("%d free blocks are on no free list", len(free))
	}
	// The index.
	refs := newBitset(sh.heapUnits())
	var entries, tombs uint32
	for i := 0; i < s.g.indexSlots; i++ {
		v := atomic.LoadUint64(sh.slot(i))
		switch v {
		case slotEmpty:
			continue
		case slotTomb:
			tombs++
			continue
		}
		entries++
		if err := s.checkSlot(sh, i, v, starts); err != nil {
			fail("%v", err)
			continue
		}
		b := slotBlock(v)
		if refs.has(b / 8) {
			fail("slot %d: block %d is referred to twice", i, b)
		}
		refs.set(b / 8)
		if sh.blockState(b) != stateLive {
			fail("slot %d: block %d is not live", i, b)
		}
	}
	for b := int64(0); b < s.g.heapSize; b += sh.blockSize(b) {
		if sh.blockState(b) == stateLive && !refs.has(b/8) {
			fail("live block %d: no slot refers to it", b)
		}
	}
	if len(errs) != 0 {
		// Counting reads keys through the index (is session data held?):
		// only a consistent one.
		return errors.Join(errs...)
	}
	for b := int64(0); b < s.g.heapSize; b += sh.blockSize(b) {
		if sh.blockState(b) == stateLive {
			f.add(sh, b, sh.blockSize(b))
		}
	}
	// The derived counts.
	counts := []struct {
		name      string
		got, want int64
	}{
		{"entries", int64(atomic.LoadUint32(sh.u32(sEntries))), int64(entries)},
		{"tombstones", int64(atomic.LoadUint32(sh.u32(sTombs))), int64(tombs)},
		{"bytes used", atomic.LoadInt64(sh.used()), f.used},
		{"heap used", atomic.LoadInt64(sh.i64(sHeapUsed)), f.heapUsed},
		{"session bytes", atomic.LoadInt64(sh.sessUsed()), f.sessUsed},
		{"waiters", int64(atomic.LoadUint32(sh.u32(sWaiters))), int64(s.waitingOn(sh))},
	}
	for c := contract.EvictPlain; c < contract.NumEvictClasses; c++ {
		for i, ttl := range []bool{false, true} {
			counts = append(counts, struct {
				name      string
				got, want int64
			}{fmt.Sprintf("evictable of class %s (TTL only: %v)", c, ttl),
				atomic.LoadInt64(sh.i64(classField(c, ttl))), f.evict[c][i]})
		}
	}
	for _, c := range counts {
		if c.got != c.want {
			fail("%s: %d counted, %d found", c.name, c.got, c.want)
		}
	}
	if c := atomic.LoadInt64(sh.credit()); c < 0 || c > 2*s.g.chunk {
		fail("credit %d outside [0, %d]", c, 2*s.g.chunk)
	}
	if atomic.LoadUint32(sh.u32(sBroken)) != 0 {
		fail("marked broken")
	}
	return errors.Join(errs...)
}

// waitingOn counts the wait slots waiting on sh.
func (s *Store) waitingOn(sh *shard) int {
	n := 0
	for i := 0; i < waitSlots; i++ {
		if ctlState(atomic.LoadUint64(s.g.waitCtl(i))) == wWaiting && atomic.LoadUint32(s.g.waitShard(i)) == uint32(sh.i) {
			n++
		}
	}
	return n
}
