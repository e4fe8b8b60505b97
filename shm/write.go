// The write path: install and writeLoop take a write through the shard lock,
// put stores it, and a write that does not fit makes room and tries again
// (retry) or fails with the reason (noMemory); Set and SetNX are its
// public faces.

package shm

import (
	"fmt"
	"strings"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// pinFlag returns flagPinned for a key never evicted: under a pinned prefix
// or the session lock prefix.
func (s *Store) pinFlag(key string) uint32 { return s.pinFlagOf(key, s.g.kindOf(key)) }

// pinFlagOf is pinFlag for a key whose kind the caller has told.
func (s *Store) pinFlagOf(key string, kind contract.KeyKind) uint32 {
	if kind == contract.KindSessionLock {
		return flagPinned
	}
	for _, p := range s.pinned {
		if strings.HasPrefix(key, p) {
			return flagPinned
		}
	}
	return 0
}

// room says why a write did not fit.
type room int

const (
	fits       room = iota
	overLimit       // the memory limit
	heapFull        // no free block large enough in the shard
	indexFull       // no index slot for a new key in the shard
	overBudget      // session data over the session budget
	overShare       // session data in the shard over its share of the budget
	neverFits       // larger than a shard's heap, or than the limit
)

// write is one write for put.
type write struct {
	key      string
	kind     contract.KeyKind
	h        uint64
	tag      uint32
	stored   []byte
	flags    uint32
	expireAt int64
	holder   uint32 // the lock's holder's tag, 0: none (entry.go)
	// replaces is the block size of the entry put last found the write
	// replaces, 0 for none.
	replaces int64
	// delta is what put found the write adds to the bytes charged.
	delta int64
}

// put stores w in sh in place of old (in slot pos), or in the free slot
// ins when old is noBlock, and reports whether it fitted; if not, nothing
// changed. The steps: the new block is allocated in flight and written;
// old is marked in flight; one index store publishes the new block (the
// commit); the new block is marked live; old is freed. Caller holds the
// lock and called sh.roomFor before looking the key up.
func (s *Store) put(sh *shard, w *write, pos int, old int64, ins int, room bool) room {
	size := entrySize(len(w.key), len(w.stored))
	if size > s.g.heapSize || chargeOf(size) > s.g.limit {
		return neverFits
	}
	w.delta, w.replaces = chargeOf(size), 0
	if old != noBlock {
		w.replaces = sh.blockSize(old)
		w.delta -= chargeOf(w.replaces)
	}
	if old == noBlock && (!room || ins < 0) {
		return indexFull
	}
	if w.kind == contract.KindSession && w.delta > 0 {
		if r := s.takeBudget(sh, w.delta); r != fits {
			return r
		}
		defer s.giveBudget() // once account has charged it below
	}
	if w.delta > 0 && !s.reserve(sh, w.delta) {
		return overLimit
	}
	b := sh.alloc(size)
	if b == noBlock {
		sh.spendCredit(0) // what reserve took for it beyond the cap goes back
		return heapFull
	}
	sh.writeEntry(b, w.key, w.stored, w.flags, w.expireAt, s.lruClock(0), w.holder)
	if old != noBlock {
		sh.setState(old, stateInFlight)
		storeRel64(sh.slot(pos), makeSlot(w.tag, b))
	} else {
		sh.holdData(w.kind, w.key, -1) // a session's lock arrives: its data is held
		sh.insertAt(ins, w.tag, b)
	}
	sh.setState(b, stateLive)
	if old != noBlock {
		sh.reaccount(old, b, w.kind)
		sh.release(old)
	} else {
		sh.account(b, w.kind, 1)
	}
	return fits
}

// writeAttempts bounds the times a write makes room and tries again: room
// made with no lock held may be taken by a concurrent writer first (many
// session writes meeting at a full budget), so a write gives up only after
// it lost that race this often, or when no room can be made.
const writeAttempts = 16

// mode is the condition a write is stored under.
type mode int

const (
	modeSet   mode = iota // always
	modeSetNX             // only if the key holds no live entry
)

// install stores key's new value if m's condition holds and reports whether
// it did; the entry's flags are pinFlag's for modeSet, flagPinned for
// modeSetNX (a lock). A write that does not fit makes room (makeRoom) with no lock held
// and tries again; if it cannot, it fails with contract.ErrNoMemory and nothing
// changed. ttl counts from the moment the condition is decided. A write
// conditioned on another key (a guard, a fence) is a Step (step.go), which
// holds both shards.
func (s *Store) install(key string, value []byte, ttl time.Duration, m mode) (installed bool, err error) {
	tk, err := s.enter()
	if err != nil {
		return false, err
	}
	defer s.leave(tk)
	on, minSize := s.compression()
	stored, cflag := storedForm(value, on, minSize)
	sh, h, tag := s.locate(key)
	// Field by field: a composite literal is built aside and copied, and
	// that copy's loads wait on its stores (a stall perf showed in
	// install: docs/measurements.md).
	var w write
	kind := s.g.kindOf(key) // once: pinFlag's and the write's
	flags := uint32(flagPinned)
	if m == modeSet {
		flags = s.pinFlagOf(key, kind)
	}
	w.key, w.kind, w.h, w.tag, w.stored, w.flags = key, kind, h, tag, stored, flags|cflag
	// The loop of writeLoop, written out: through its closure a set took
	// longer (docs/measurements.md).
	locked := false // sh, for a corruption found under it
	defer s.catchHeld(sh, sh, &locked, &err)
	for attempt := 0; ; attempt++ {
		if err := s.lock(sh); err != nil {
			return false, err
		}
		locked = true
		var t int64
		ok := true
		room := sh.roomFor()
		pos, old, ins := sh.lookup(tag, key)
		oldExpired := old != noBlock && s.lapsed(sh, old, &t)
		if m == modeSetNX && old != noBlock && !oldExpired {
			ok = false
		}
		r := fits
		if ok {
			w.expireAt = 0
			if ttl != 0 {
				w.expireAt = clockAt(&t) + int64(ttl)
			}
			w.flags &^= flagRead
			if w.kind == contract.KindSession && old != noBlock && !oldExpired {
				w.flags |= sh.entryMeta(old) & flagRead // the same session, rewritten
			}
			r = s.put(sh, &w, pos, old, ins, room)
			if r == fits {
				if oldExpired {
					sh.count(cExpirations)
				}
				if m == modeSetNX {
					sh.count(cSetNXWins)
				} else {
					sh.count(cSets)
				}
				s.sweepSome(sh, sweepPerWrite, &t)
			}
		} else if m == modeSetNX {
			sh.count(cSetNXLosses)
		}
		locked = false
		s.unlock(sh)
		if !ok || r == fits {
			return ok, nil
		}
		if err := s.retry(sh, r, &w, attempt); err != nil {
			return false, err
		}
	}
}

// writeLoop is the shape of every write that may have to make room: take
// the locks of sh and gsh (gsh may be sh), take step (look up, decide, put
// w), release them; a put that did not fit makes room for w with no lock
// held (makeRoom: room so made may be taken by a concurrent writer first)
// and step is taken again on what the shard holds then, up to
// writeAttempts times, else the write fails with contract.ErrNoMemory and
// nothing changed. step returns what put answered (fits when it stored
// nothing); an error it returns ends the loop.
func (s *Store) writeLoop(sh, gsh *shard, w *write, step func() (room, error)) (err error) {
	locked := false // sh and gsh, for a corruption found under them
	defer s.catchHeld(sh, gsh, &locked, &err)
	for attempt := 0; ; attempt++ {
		if err := s.lockTwo(sh, gsh); err != nil {
			return err
		}
		locked = true
		r, err := step()
		locked = false
		s.unlockTwo(sh, gsh)
		if err != nil || r == fits {
			return err
		}
		if err := s.retry(sh, r, w, attempt); err != nil {
			return err
		}
	}
}

// retry is what a write loop does, holding no lock, after its attempt
// number attempt to write w to sh was refused with r: nil if it is to try
// again (room was made), else the write's error.
func (s *Store) retry(sh *shard, r room, w *write, attempt int) error {
	if r == neverFits || attempt == writeAttempts {
		return s.noMemory(r, w)
	}
	fit, err := s.makeRoom(sh, r, w)
	if err != nil {
		return err
	}
	if !fit {
		return s.noMemory(r, w)
	}
	return nil
}

// noMemory is the error of the write w that r refused.
func (s *Store) noMemory(r room, w *write) error {
	if r == overBudget {
		return s.g.sess.OverBudget(s.sessionLimit())
	}
	size := entrySize(len(w.key), len(w.stored))
	if r == overShare {
		limit := s.sessionLimit()
		share := s.sessionShare(limit)
		err := s.g.sess.OverShare(share, limit, len(s.shards))
		if chargeOf(size) > share {
			return fmt.Errorf("%w: a session entry of %d bytes is larger than that alone", err, chargeOf(size))
		}
		return err
	}
	if size > s.g.heapSize {
		return fmt.Errorf("%w: an entry of %d bytes exceeds the largest this segment holds (%d bytes, a shard's heap)",
			contract.ErrNoMemory, size, s.g.heapSize)
	}
	// The old entry stays until the new one is in place (put), so both
	// are in the shard's heap at once.
	if r == heapFull && w.replaces > 0 && size+w.replaces > s.g.heapSize {
		return fmt.Errorf("%w: an entry of %d bytes cannot replace the key's entry of %d bytes: a shard's heap (%d bytes) holds both while the new one is written (delete the key first, or keep such values under half of that)",
			contract.ErrNoMemory, size, w.replaces, s.g.heapSize)
	}
	return contract.ErrNoMemory
}

// Set stores value under key with a TTL (0: none), replacing any entry.
func (s *Store) Set(key string, value []byte, ttl time.Duration) error {
	if err := contract.CheckWrite(key, value, ttl); err != nil {
		return err
	}
	_, err := s.install(key, value, ttl, modeSet)
	return err
}

// SetNX stores value under key only if no live entry is there, with its
// TTL in the same step; the entry is a lock and is never evicted.
func (s *Store) SetNX(key string, value []byte, ttl time.Duration) (contract.SetNXOutcome, error) {
	return s.setNX(key, value, ttl)
}

func (s *Store) setNX(key string, value []byte, ttl time.Duration) (contract.SetNXOutcome, error) {
	if err := contract.CheckWrite(key, value, ttl); err != nil {
		return 0, err
	}
	ok, err := s.install(key, value, ttl, modeSetNX)
	switch {
	case err != nil:
		return 0, err
	case ok:
		return contract.Inserted, nil
	}
	return contract.Exists, nil
}
