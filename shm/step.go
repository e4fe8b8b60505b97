package shm

import (
	"sync/atomic"

	"github.com/ephpm/ephpm/contract"
)

// Step applies st (contract.Step) with the shards of its lock and its key held
// (lockTwo: a session's data and lock share one shard), so that the
// acquire or the guard, the action and the release are one step, as
// install's writes are. An acquire's lock is put first, then the value of
// ActionSet: a value that does not fit takes the lock just put away again
// (its old entry, if any, had lapsed: gone either way) before the step
// makes room with no lock held and is decided again, so a step that cannot
// fit fails with nothing changed. A grant with st.Bound records this
// process as the lock's holder (entry.go). A fenced step maps the fence
// table first: a table that cannot be made fails it with nothing done.
func (s *Store) Step(st *contract.Step) (err error) {
	st.Reset()
	if err := contract.CheckStep(st); err != nil {
		return err
	}
	useLock := st.UsesLock()
	if !useLock && st.Action == contract.ActionNone {
		st.Held = true
		return nil
	}
	var ft *fenceTable
	if st.Fenced || st.Guard == contract.GuardFence || st.Guard == contract.GuardFenceHolder {
		if ft, err = s.fences(); err != nil {
			return err
		}
	}
	tk, err := s.enter()
	if err != nil {
		return err
	}
	defer s.leave(tk)
	on, minSize := s.compression()

	var sh, lsh *shard
	var h, lh uint64
	var tag, ltag uint32
	if st.Action != contract.ActionNone {
		sh, h, tag = s.locate(st.Key)
	}
	if useLock {
		lsh, lh, ltag = s.locate(st.Lock)
	}
	if sh == nil {
		sh = lsh
	} else if lsh == nil {
		lsh = sh
	}
	// The entries the step may write, field by field (see install).
	var w, lw write
	if st.Action == contract.ActionSet {
		stored, cflag := storedForm(st.Value, on, minSize)
		w.key, w.kind, w.h, w.tag, w.stored, w.flags = st.Key, s.g.kindOf(st.Key), h, tag, stored, s.pinFlag(st.Key)|cflag
	}
	if st.Acquire {
		stored, cflag := storedForm(st.Token, on, minSize)
		lw.key, lw.kind, lw.h, lw.tag, lw.stored, lw.flags = st.Lock, s.g.kindOf(st.Lock), lh, ltag, stored, flagPinned|cflag
		if st.Bound {
			lw.holder = s.tag
		}
	}

	locked := false // sh and lsh, for a corruption found under them
	defer s.catchHeld(sh, lsh, &locked, &err)
	for attempt := 0; ; attempt++ {
		if err := s.lockTwo(sh, lsh); err != nil {
			return err
		}
		locked = true
		var t int64

		// The acquire (its lock put at once) or the guard.
		held, r, short := true, fits, &w
		if st.Acquire {
			room := lsh.roomFor()
			pos, old, ins := lsh.lookup(ltag, st.Lock)
			lapsed := old != noBlock && s.lapsed(lsh, old, &t)
			if held = old == noBlock || lapsed; held {
				lw.expireAt = 0
				if st.LockTTL != 0 {
					lw.expireAt = clockAt(&t) + int64(st.LockTTL)
				}
				if r = s.put(lsh, &lw, pos, old, ins, room); r != fits {
					short = &lw
				} else if lapsed {
					lsh.count(cExpirations)
				}
			} else {
				lsh.count(cSetNXLosses)
				st.Outcome = contract.Exists
			}
		} else {
			switch st.Guard {
			case contract.GuardToken:
				_, g := s.live(lsh, lh, ltag, st.Lock, &t)
				held = g != noBlock && lsh.valueEquals(g, st.Token)
			case contract.GuardFence, contract.GuardFenceHolder:
				n, known := ft.current(lh)
				held = known && n == st.Fence &&
					!(st.Guard == contract.GuardFenceHolder && s.heldByAnother(lsh, lh, ltag, st.Lock, st.Token, &t))
			}
		}

		// The action.
		if held && r == fits {
			switch st.Action {
			case contract.ActionSet:
				room := sh.roomFor()
				pos, old, ins := sh.lookup(tag, st.Key)
				lapsed := old != noBlock && s.lapsed(sh, old, &t)
				w.expireAt = 0
				if st.TTL != 0 {
					w.expireAt = clockAt(&t) + int64(st.TTL)
				}
				w.flags &^= flagRead
				if w.kind == contract.KindSession && old != noBlock && !lapsed {
					w.flags |= sh.entryMeta(old) & flagRead // the same session, rewritten
				}
				if r = s.put(sh, &w, pos, old, ins, room); r == fits {
					if lapsed {
						sh.count(cExpirations)
					}
					sh.count(cSets)
					st.Done = true
				} else if st.Acquire {
					// No room for the value: the lock goes again.
					if pos, b, _ := lsh.lookup(ltag, st.Lock); pos >= 0 {
						s.removeEntry(lsh, pos, b, lh)
					}
				}
			case contract.ActionGet:
				s.readLocked(sh, h, tag, st, &t)
				st.Done = true
			case contract.ActionDel:
				if pos, b, _ := sh.lookup(tag, st.Key); pos >= 0 {
					gone := expired(sh.entryExpireAt(b), &t)
					if gone {
						sh.count(cExpirations)
					}
					s.removeEntry(sh, pos, b, h)
					st.Done = !gone
				}
			case contract.ActionExpire:
				if _, b := s.live(sh, h, tag, st.Key, &t); b != noBlock {
					s.retime(sh, b, st.Key, st.TTL, &t)
					st.Done = true
				}
			}
		}

		if held && r == fits {
			st.Held = true
			if st.Acquire {
				if st.Fenced {
					st.Fence = ft.mint(lh)
				}
				lsh.count(cSetNXWins)
				st.Outcome = contract.Inserted
				s.sweepSome(lsh, sweepPerWrite, &t)
			}
			if st.Action == contract.ActionSet {
				s.sweepSome(sh, sweepPerWrite, &t)
			}
			if st.Release && (st.Action != contract.ActionExpire || st.Done) {
				pos, b := s.live(lsh, lh, ltag, st.Lock, &t)
				if st.Released = b != noBlock && lsh.valueEquals(b, st.Token); st.Released {
					s.removeEntry(lsh, pos, b, lh)
					lsh.count(cDelIfEqMatches)
				} else {
					lsh.count(cDelIfEqMismatches)
				}
			}
		}
		locked = false
		s.unlockTwo(sh, lsh)
		if !held || r == fits {
			return nil
		}
		if short == &lw {
			err = s.retry(lsh, r, &lw, attempt)
		} else {
			err = s.retry(sh, r, &w, attempt)
		}
		if err != nil {
			return err
		}
	}
}

// readLocked is ActionGet of st.Key, as GetInto reads under the lock: a
// hit stamps the entry's access and marks session data read. Caller holds
// sh's lock.
func (s *Store) readLocked(sh *shard, h uint64, tag uint32, st *contract.Step, t *int64) {
	_, b := s.live(sh, h, tag, st.Key, t)
	if b == noBlock {
		sh.countRead(cMisses)
		return
	}
	if p := sh.entryAccess(b); atomic.LoadUint32(p) != s.lruClock(*t) {
		storeDerived32(p, s.lruClock(*t))
	}
	if sh.entryMeta(b)&flagRead == 0 && s.g.kindOf(st.Key) == contract.KindSession {
		sh.markRead(b) // a returning user's session
	}
	sh.countRead(cHits)
	st.N, st.Found = sh.logicalLen(b), true
	if st.N <= len(st.Dst) {
		sh.readInto(b, st.Dst[:st.N])
	}
}
