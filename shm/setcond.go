package shm

import (
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
)

// SetCond is the conditional set of backend.CondSetter: under key's shard
// lock, the entry is looked up, cond decided on it (an expired entry, or a
// session lock whose holder died, is no entry), the old value copied when
// get asks for it, and the new entry put, all in one step, as install's
// writes are; a write that does not fit makes room with no lock held and
// is decided again on what the key holds then (writeLoop), so old is what
// the key held at the step that decided. SetIfAbsent stores a lock, as
// SetNX does (pinned, counted as a set_nx win or loss). SetIfEqual
// replaces a live entry that holds cmp, the way a holder renews its lock
// (SET key token IFEQ token PX ttl): the new entry keeps the old one's pin
// and recorded holder, as ExpireIfEq keeps them, so a lock so renewed is
// never evicted and a session lock still lapses when its holder dies
// (entry.go); a lock whose pin went with the renewal would be evicted
// under memory pressure while its holder holds it, and a second set_nx
// would win it. SetAlways stores as Set does, whatever the key held
// (pinned only under a pinned prefix or the session lock prefix, no
// holder): it is a plain overwrite that also returns the old value.
func (s *Store) SetCond(key string, value []byte, ttl time.Duration, cond backend.SetCondition, cmp []byte, get bool) (stored bool, old []byte, found bool, err error) {
	if err := contract.CheckWrite(key, value, ttl); err != nil {
		return false, nil, false, err
	}
	if cond < backend.SetAlways || cond > backend.SetIfEqual {
		return false, nil, false, contract.ErrInvalidArgument
	}
	tk, err := s.enter()
	if err != nil {
		return false, nil, false, err
	}
	defer s.leave(tk)
	on, minSize := s.compression()
	form, cflag := storedForm(value, on, minSize)
	flags := s.pinFlag(key)
	if cond == backend.SetIfAbsent {
		flags = flagPinned
	}
	sh, h, tag := s.locate(key)
	kind := s.g.kindOf(key)
	var w write
	err = s.writeLoop(sh, sh, &w, func() (room, error) {
		var t int64
		room := sh.roomFor()
		pos, b, ins := sh.lookup(tag, key)
		live := b != noBlock && !s.lapsed(sh, b, &t)
		stored, found, old = false, live, nil
		if get && live {
			old = make([]byte, sh.logicalLen(b))
			sh.readInto(b, old)
		}
		ok := cond == backend.SetAlways || cond == backend.SetIfAbsent && !live ||
			cond == backend.SetIfEqual && live && sh.valueEquals(b, cmp)
		if !ok {
			if cond == backend.SetIfAbsent {
				sh.count(cSetNXLosses)
			}
			return fits, nil
		}
		w = write{key: key, kind: kind, h: h, tag: tag, stored: form, flags: flags | cflag}
		if ttl != 0 {
			w.expireAt = clockAt(&t) + int64(ttl)
		}
		if kind == contract.KindSession && live {
			w.flags |= sh.entryMeta(b) & flagRead // the same session, rewritten
		}
		if cond == backend.SetIfEqual {
			// A renewal: the lock stays a lock, held by whom it was (live:
			// a holder recorded is alive, or this process).
			w.flags |= sh.entryMeta(b) & flagPinned
			w.holder = sh.entryHolder(b)
		}
		r := s.put(sh, &w, pos, b, ins, room)
		if r != fits {
			return r, nil
		}
		stored = true
		if b != noBlock && !live {
			sh.count(cExpirations)
		}
		if cond == backend.SetIfAbsent {
			sh.count(cSetNXWins)
		} else {
			sh.count(cSets)
		}
		s.sweepSome(sh, sweepPerWrite, &t)
		return fits, nil
	})
	if err != nil {
		return false, nil, false, err
	}
	return stored, old, found, nil
}
