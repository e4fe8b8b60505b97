package shm

import (
	"sync/atomic"
	"unsafe"

	"github.com/ephpm/ephpm/contract"
)

// Reads with no lock. Each shard counts the releases of its lock (sSeq,
// beside the lock word): whoever holds the lock adds one to the count just
// before releasing it (unlock). A get reads the count and sees the lock
// free, looks the key up and copies the value with no lock and no write to
// the shard, then sees the lock still free and the count unmoved: then no
// holder changed the shard during the read (one that took the lock after
// the first look either holds it still or has counted its release; the
// count is stored before the release, and the second look reads the lock
// word before the count), so what was copied is the entry as it stood at
// one instant. Otherwise, or when the read would have to write (an expired
// entry to remove, an LRU stamp to renew, a session's first read to mark),
// decompress, or decide whether a session lock's holder lives (an entry
// that records another process as its holder: it has lapsed if that
// process is dead, entry.go, and the locked path removes it as it answers),
// the get takes the lock as before.
//
// Because the read can meet a shard half-way through a change, every
// offset it follows is checked against the heap before it is read through:
// a torn read copies wrong bytes that the second look then rejects, never
// reads outside the mapping. Nothing in the shard is written but the hit
// or miss counter, by an atomic add (the locked path adds to the same
// counters the same way); the segment's LRU clock may advance, as any
// reader's does. A shard marked broken is left to the locked path, which
// refuses it.
//
// The argument needs loads kept in order and stores kept in order, which
// x86-TSO gives (and the Go compiler keeps sync/atomic operations and calls
// in program order); on other architectures an acquire load does not order
// the plain loads after it, nor an acquiring CAS the holder's plain stores,
// so there reads take the lock (readsWithoutLock, storerel_*.go).
//
// A holder killed with the lock held leaves the lock word held: reads take
// the lock, and whoever takes it over recovers the shard and counts its
// release. The count never repeats a value a read could have seen (64
// bits, only ever increased).

// countRead adds one to a counter that reads without the lock add to too.
func (sh *shard) countRead(c int) { atomic.AddUint64(sh.u64(sCounters+int64(c)*8), 1) }

// readUnlocked is GetInto with no lock: ok is false when the read has to be
// made under the lock (see above), and then nothing was counted.
func (s *Store) readUnlocked(sh *shard, tag uint32, key string, dst []byte) (n int, found, ok bool) {
	if !readsWithoutLock || s.check.Load() != checkNotDue {
		return 0, false, false // or the file's check is due: lock makes it (removed.go)
	}
	lockp, seqp := sh.u32(sLock), sh.u64(sSeq)
	seq := atomic.LoadUint64(seqp)
	if atomic.LoadUint32(lockp) != 0 || atomic.LoadUint32(sh.u32(sBroken)) != 0 {
		return 0, false, false // held, or broken: the locked path answers
	}
	b := sh.lookupUnlocked(tag, key)
	if b == noBlock {
		if atomic.LoadUint32(lockp) != 0 || atomic.LoadUint64(seqp) != seq {
			return 0, false, false
		}
		sh.countRead(cMisses)
		return 0, false, true
	}
	meta := sh.entryMeta(b)
	if meta&flagCompressed != 0 || meta&flagRead == 0 && s.g.kindOf(key) == contract.KindSession {
		return 0, false, false
	}
	if o := sh.entryHolder(b); o != 0 && o != s.tag {
		return 0, false, false // another process's session lock: lapsed if it died (lapsed)
	}
	var t int64
	if expired(sh.entryExpireAt(b), &t) || atomic.LoadUint32(sh.entryAccess(b)) != s.lruClock(t) {
		return 0, false, false
	}
	n = int(meta & metaLenMask)
	off := b + align8(entryHeader+int64(len(key)))
	if off+int64(n) > s.g.heapSize {
		return 0, false, false
	}
	if n <= len(dst) && n > 0 {
		copy(dst[:n], unsafe.Slice((*byte)(sh.at(off)), n))
	}
	if atomic.LoadUint32(lockp) != 0 || atomic.LoadUint64(seqp) != seq {
		return 0, false, false
	}
	sh.countRead(cHits)
	return n, true, true
}

// lookupUnlocked is lookup's search with no lock: it returns the block of
// key's entry as the index showed it, or noBlock; either may be torn by a
// concurrent change, which the caller's second read of the count detects.
// Every block it reads through lies within the heap.
func (sh *shard) lookupUnlocked(tag uint32, key string) int64 {
	mask := sh.indexSlots - 1
	for i, n := sh.home(tag), 0; n <= mask; i, n = (i+1)&mask, n+1 {
		v := atomic.LoadUint64(sh.slot(i))
		switch {
		case v == slotEmpty:
			return noBlock
		case v == slotTomb || slotTag(v) != tag:
			continue
		}
		b := slotBlock(v)
		if b < 0 || b+entryHeader+int64(len(key)) > sh.heapSize {
			return noBlock
		}
		// The key's length read once: a second read may differ.
		if sh.entryKeyLen(b) == len(key) && unsafe.String((*byte)(sh.at(b+entryHeader)), len(key)) == key {
			return b
		}
	}
	return noBlock
}

// GetInto copies a live entry's value into dst if it fits, and returns its
// length either way. The value copied is one the entry held at one instant:
// read with no lock when nothing in the read needs writing (readUnlocked),
// else under the shard lock.
func (s *Store) GetInto(key string, dst []byte) (n int, found bool, err error) {
	tk, err := s.enter()
	if err != nil {
		return 0, false, err
	}
	sh, h, tag := s.locate(key)
	if n, found, ok := s.readUnlocked(sh, tag, key, dst); ok {
		s.leave(tk)
		return n, found, nil
	}
	if err := s.lock(sh); err != nil {
		s.leave(tk)
		return 0, false, err
	}
	defer s.unlockKeyCatching(sh, tk, &err)
	var t int64
	_, b := s.live(sh, h, tag, key, &t)
	if b == noBlock {
		sh.countRead(cMisses)
		return 0, false, nil
	}
	if p := sh.entryAccess(b); atomic.LoadUint32(p) != s.lruClock(t) {
		storeDerived32(p, s.lruClock(t))
	}
	if sh.entryMeta(b)&flagRead == 0 && s.g.kindOf(key) == contract.KindSession {
		sh.markRead(b) // a returning user's session
	}
	sh.countRead(cHits)
	size := sh.logicalLen(b)
	if size <= len(dst) {
		sh.readInto(b, dst[:size])
	}
	return size, true, nil
}

// Exists reports whether key holds a live entry. It counts no hit or miss.
func (s *Store) Exists(key string) (exists bool, err error) {
	sh, h, tag, tk, err := s.lockKey(key)
	if err != nil {
		return false, err
	}
	defer s.unlockKeyCatching(sh, tk, &err)
	var t int64
	_, b := s.live(sh, h, tag, key, &t)
	return b != noBlock, nil
}
