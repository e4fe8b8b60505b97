// Steps: one atomic attempt that takes or checks a lock, acts on one key,
// and releases the lock, whatever the combination. Every backend applies
// a Step in one step of its own (package backend: Backend.Step); the
// members that fuse a lock with a read or a write are each one Step.

package kv

import (
	"fmt"
	"time"
)

// Guard says what must hold of a Step's lock for the step to act: it is
// checked in the same atomic step as the action.
type Guard uint8

const (
	// GuardNone: nothing is checked.
	GuardNone Guard = iota
	// GuardToken: Lock holds a live entry equal to Token.
	GuardToken
	// GuardFence: Fence is still Lock's latest fenced grant (no grant of
	// Lock that mints a fence came since); whether Lock is still held
	// does not matter.
	GuardFence
	// GuardFenceHolder: GuardFence, and Lock holds no live entry other
	// than Token (a holder whose grant minted no fence).
	GuardFenceHolder
)

// Action is what a Step does to its Key once its lock is taken or its
// guard holds.
type Action uint8

const (
	// ActionNone: nothing; the step takes, checks or releases its lock.
	ActionNone Action = iota
	// ActionGet copies Key's live value into Dst if it fits, as GetInto
	// does: N its length either way (N > len(Dst): nothing copied),
	// Found whether there was one.
	ActionGet
	// ActionSet stores Value under Key with TTL (0: none), counted from
	// the step, as Set does (a write that does not fit fails the step
	// with nothing changed).
	ActionSet
	// ActionDel removes Key (whether or not it held a live entry).
	ActionDel
	// ActionExpire gives Key's live entry a TTL of TTL (0: none) from
	// the step, as Expire does.
	ActionExpire
)

// Step is one atomic attempt on a store: optionally take a lock
// (Acquire) or check one (Guard), then act on one key (Action), then
// optionally release the lock (Release), all decided and done in one
// step, so that no other call comes between them. Each part is optional,
// and every combination means the same on every backend; the ops table's
// members that fuse a lock with a read or a write (set_nx_wait_get's
// attempt, set_guarded_release, set_fenced_release, ...) are each one
// Step (package backend names them).
//
// The caller fills the inputs, keeps the Step (a store reads it during
// the call only, and keeps nothing of it), and reads the outputs after
// the call; every output is set by the call, whatever it held before. A
// Step may be reused, with its inputs changed or not.
//
// The parts, in the order the step applies them:
//
//   - Acquire: if Lock holds no live entry (an expired one counts as
//     none), Lock = Token with LockTTL (0: none), as SetNX stores a lock
//     (never evicted); Outcome Inserted, and with Fenced, Fence the
//     grant's fencing token (a number greater than that of every earlier
//     fenced grant of Lock, in the sequence SetNXFenced and LockAttempt
//     mint from). Else Outcome Exists, and nothing else happens. An
//     acquiring step checks no Guard and releases nothing.
//   - Guard (when not acquiring): if it does not hold, Held is false
//     and nothing else happens.
//   - Action, on Key: see Action. Done reports whether it was done.
//   - Release: DelIfEq of Lock with Token (waking a waiter, handing the
//     lock on, as every release does), only when the guard held and,
//     for ActionExpire, the action was done; Released reports whether
//     Lock held Token and was released.
//
// Held is false only when the acquire found Lock held or the guard did
// not hold: then nothing changed. An error wrapping ErrInvalidArgument,
// ErrNoMemory or ErrNothingDone means nothing changed; another error
// leaves the outcome unknown, as for every member.
type Step struct {
	// Lock is the key of the lock the step takes, checks or releases,
	// with Token: its holder's value.
	Lock  string
	Token []byte
	// Acquire takes Lock for Token, with LockTTL (0: no expiry).
	Acquire bool
	// Fenced: the acquire mints the grant's fence into Fence.
	Fenced bool
	// Bound: the lock lasts no longer than the process that took it,
	// where the store can tell (a shared-memory segment: a session's
	// lock granted to the session handler); elsewhere it has no effect.
	Bound   bool
	LockTTL time.Duration
	// Guard is the condition on Lock when not acquiring.
	Guard Guard
	// Fence is, for GuardFence and GuardFenceHolder, the fence that must
	// still be Lock's latest grant; after a Fenced acquire, the fence it
	// minted (0 if it took nothing).
	Fence int64

	// Action is what is done to Key: with Value and TTL (ActionSet, TTL
	// also for ActionExpire), or into Dst (ActionGet).
	Action Action
	Key    string
	Value  []byte
	TTL    time.Duration
	Dst    []byte

	// Release releases Lock with Token after the action.
	Release bool

	// Outcome is the acquire's: Inserted or Exists (0 without Acquire).
	Outcome SetNXOutcome
	// Held: the acquire took Lock, or the guard held (always, for
	// GuardNone). False: nothing changed.
	Held bool
	// Done: the action was done (ActionSet: Key written; ActionDel: a
	// live entry removed; ActionExpire: Key was live and got its TTL;
	// ActionGet: Key read, N and Found as ActionGet says).
	Done  bool
	N     int
	Found bool
	// Released: Lock held Token and was released.
	Released bool
}

// reset sets a Step's outputs to what a step that did nothing reports.
func (st *Step) reset() {
	st.Outcome, st.Held, st.Done, st.N, st.Found, st.Released = 0, false, false, 0, false, false
	if st.Acquire {
		st.Fence = 0
	}
}

// Reset is reset for a backend outside this package: each Step method
// calls it first.
func (st *Step) Reset() { st.reset() }

// usesLock reports whether st takes, checks or releases its lock.
func (st *Step) usesLock() bool { return st.Acquire || st.Guard != GuardNone || st.Release }

// UsesLock is usesLock for a backend outside this package.
func (st *Step) UsesLock() bool { return st.usesLock() }

// CheckStep is the limits on a Step's inputs, for every backend: those of
// each part it has (a key, a value, a TTL, a positive fence for a fence
// guard), checked in the order the members that are Steps check theirs,
// and the combinations that mean something: an acquire checks no guard,
// releases nothing and acts on another key than its lock; Fenced and
// Bound belong to an acquire. It returns an error wrapping
// ErrInvalidArgument, or nil.
func CheckStep(st *Step) error {
	switch st.Action {
	case ActionNone:
	case ActionGet, ActionDel:
		if err := CheckKey(st.Key); err != nil {
			return err
		}
	case ActionSet:
		if err := CheckWrite(st.Key, st.Value, st.TTL); err != nil {
			return err
		}
	case ActionExpire:
		if err := CheckKey(st.Key); err != nil {
			return err
		}
		if err := CheckTTL(st.TTL); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: step action %d is unknown", ErrInvalidArgument, st.Action)
	}
	if !st.usesLock() {
		if st.Fenced || st.Bound {
			return errStepAcquireOnly
		}
		return nil
	}
	if err := CheckKey(st.Lock); err != nil {
		return err
	}
	if st.Acquire {
		if err := CheckValue(st.Token); err != nil {
			return err
		}
		if err := CheckTTL(st.LockTTL); err != nil {
			return err
		}
		switch {
		case st.Guard != GuardNone || st.Release:
			return fmt.Errorf("%w: a step that acquires its lock checks no guard and releases nothing", ErrInvalidArgument)
		case st.Action != ActionNone && st.Key == st.Lock:
			return fmt.Errorf("%w: a step that acquires its lock acts on another key", ErrInvalidArgument)
		}
		return nil
	}
	if st.Fenced || st.Bound {
		return errStepAcquireOnly
	}
	switch st.Guard {
	case GuardNone, GuardToken:
	case GuardFence, GuardFenceHolder:
		if st.Fence <= 0 {
			return badFence(st.Fence)
		}
	default:
		return fmt.Errorf("%w: step guard %d is unknown", ErrInvalidArgument, st.Guard)
	}
	return nil
}

var errStepAcquireOnly = fmt.Errorf("%w: Fenced and Bound belong to a step that acquires its lock", ErrInvalidArgument)

// Step applies st (see Step) under the shard locks of its lock and its
// key, taken in address order as every two-key write takes them (a
// session's data and lock share one shard): the acquire or the guard,
// the action and the release are one step. The entries it writes (the
// lock an acquire stores, the value of ActionSet) are charged before any
// is put, so a step that does not fit makes room with no lock held and is
// decided again, as install does, and fails with nothing changed if it
// cannot. A value read is copied under the lock when its block is
// recyclable, else after it, as GetInto copies.
func (s *Store) Step(st *Step) error {
	if err := CheckStep(st); err != nil {
		return err
	}
	st.reset()
	useLock := st.usesLock()
	if !useLock && st.Action == ActionNone {
		st.Held = true
		return nil
	}
	var sh, lsh *shard
	var h, lh uint32
	var kind, lkind KeyKind
	if st.Action != ActionNone {
		sh, h, kind = s.locate(st.Key)
	}
	if useLock {
		lsh, lh, lkind = s.locate(st.Lock)
	}
	if sh == nil {
		sh = lsh
	} else if lsh == nil {
		lsh = sh
	}
	first, second := lockOrder(sh, lsh)

	// The entries the step may write, built before the lock as install
	// builds its own (see prepare): the value, and an acquire's lock.
	var b, lb block
	var size, lsize int64
	var flags uint32
	if st.Action == ActionSet {
		flags = s.pinFlag(st.Key)
		size = int64(valueOffset(len(st.Key))+len(st.Value)) + entryOverhead
		if !s.buildsPlainSmall(st.Key, st.Value) {
			b, size = s.prebuild(st.Key, st.Value, flags)
		}
	}
	if st.Acquire {
		lsize = int64(valueOffset(len(st.Lock))+len(st.Token)) + entryOverhead
		if !s.buildsPlainSmall(st.Lock, st.Token) {
			lb, lsize = s.prebuild(st.Lock, st.Token, flagPinned)
		}
	}
	var g, lg grant
	for attempt := 0; ; attempt++ {
		first.mu.Lock()
		if second != nil {
			second.mu.Lock()
		}
		c := clock{s: s}
		mu1, mu2 := &first.mu, mutexOf(second)

		// The acquire or the guard.
		li := -1
		var lold block
		held := true
		if st.Acquire {
			if li = lsh.t.find(lh, st.Lock); li >= 0 {
				lold = lsh.t.blocks[li]
			}
			held = lold == nil || c.expired(lold)
		} else {
			switch st.Guard {
			case GuardToken:
				gb := lsh.t.get(lh, st.Lock)
				held = gb != nil && !c.expired(gb) && valueEqualsHeld(gb, st.Token, mu1, mu2)
			case GuardFence, GuardFenceHolder:
				n, known := lsh.fences.current(s.fenceHash(st.Lock))
				held = known && n == st.Fence &&
					!(st.Guard == GuardFenceHolder && heldByAnother(lsh, lh, st.Lock, st.Token, &c, mu1, mu2))
			}
		}
		if !held {
			if st.Acquire {
				lsh.c.setNXLosses++
				st.Outcome = Exists
			}
			if second != nil {
				second.mu.Unlock()
			}
			first.mu.Unlock()
			if attempt > 0 { // only makeRoom grants
				s.giveBack(&g)
				s.giveBack(&lg)
			}
			return nil
		}

		// Room for what the step writes: all of it, or none.
		oi := -1
		var old block
		if st.Action == ActionSet {
			if oi = sh.t.find(h, st.Key); oi >= 0 {
				old = sh.t.blocks[oi]
			}
		}
		var delta, need, lneed int64
		short, lshort := fits, fits
		// As install charges (an expired old entry is swept by makeRoom:
		// it frees nothing here), the common case inline.
		if st.Action == ActionSet {
			delta, need = size, size
			if old != nil {
				delta -= blockCost(old)
				if !c.expired(old) {
					need = delta
				}
			}
			if kind != KindSession && g.store == 0 {
				if !s.charge(sh, delta) {
					short = storeFull
				}
			} else {
				short = s.reserve(sh, kind, delta, &g)
			}
		}
		if st.Acquire && short == fits {
			ldelta := lsize
			lneed = lsize // lold, if any, has expired
			if lold != nil {
				ldelta -= blockCost(lold)
			}
			if lkind != KindSession && lg.store == 0 {
				if !s.charge(lsh, ldelta) {
					lshort = storeFull
				}
			} else {
				lshort = s.reserve(lsh, lkind, ldelta, &lg)
			}
		}
		if short != fits || lshort != fits {
			if short == fits && st.Action == ActionSet {
				s.unreserve(sh, kind, delta) // the lock did not fit
			}
			if second != nil {
				second.mu.Unlock()
			}
			first.mu.Unlock()
			var err error
			if short != fits {
				g, err = s.makeRoom(need, keep{st.Key, st.Lock}, kind, short, attempt)
			} else {
				lg, err = s.makeRoom(lneed, keep{st.Lock, st.Key}, lkind, lshort, attempt)
			}
			if err != nil {
				s.giveBack(&g)
				s.giveBack(&lg)
				return err
			}
			continue
		}

		// The lock taken, then the action, then the release.
		st.Held = true
		if st.Acquire {
			if lold != nil {
				lsh.c.expirations++
			}
			s.putEntry(lsh, lold, li, lh, lkind, lb, st.Lock, st.Token, flagPinned, c.after(st.LockTTL))
			if st.Fenced {
				st.Fence = s.mint(lsh, st.Lock)
			}
			lsh.c.setNXWins++
			st.Outcome = Inserted
		}
		var read block // a value to copy once the locks are released
		switch st.Action {
		case ActionSet:
			if old != nil && st.Acquire && sh == lsh {
				oi = sh.t.find(h, st.Key) // the lock's put may have moved it
			}
			if old != nil && c.expired(old) {
				sh.c.expirations++
			} else if kind == KindSession && old != nil {
				flags |= blockMeta(old) & flagRead // the same session, rewritten
			}
			s.putEntry(sh, old, oi, h, kind, b, st.Key, st.Value, flags, c.after(st.TTL))
			sh.c.sets++
			st.Done = true
		case ActionGet:
			st.Done = true
			read = s.readHeld(sh, h, kind, st, &c)
		case ActionDel:
			if i := sh.t.find(h, st.Key); i >= 0 {
				expired := c.expired(sh.t.blocks[i])
				s.removeAt(sh, i, expired)
				st.Done = !expired
			}
		case ActionExpire:
			if v, _ := s.live(sh, h, st.Key, &c); v != nil {
				s.retime(sh, v, kind, h, c.after(st.TTL))
				st.Done = true
			}
		}
		if st.Release && (st.Action != ActionExpire || st.Done) {
			v, i := s.live(lsh, lh, st.Lock, &c)
			if v != nil && valueEqualsHeld(v, st.Token, mu1, mu2) {
				s.removeAt(lsh, i, false)
				lsh.c.delIfEqMatches++
				st.Released = true
			} else {
				lsh.c.delIfEqMismatches++
			}
		}
		if second != nil {
			second.mu.Unlock()
		}
		first.mu.Unlock()
		if attempt > 0 { // only makeRoom grants
			s.giveBack(&g)
			s.giveBack(&lg)
		}
		if read != nil {
			readInto(read, st.Dst[:st.N])
		}
		return nil
	}
}

// prebuild is prepare for an entry of a Step whose value is large or
// compressed: its block built now, with no lock held, and what the entry
// is charged.
func (s *Store) prebuild(key string, value []byte, flags uint32) (block, int64) {
	b := s.build(key, value, flags, 0)
	return b, int64(blockSize(b)) + entryOverhead
}

// unreserve gives back what reserve charged (delta, for an entry of kind
// in sh) for a write that will not be put. Caller holds sh.mu.
func (s *Store) unreserve(sh *shard, kind KeyKind, delta int64) {
	s.charge(sh, -delta)
	if kind == KindSession {
		s.releaseSession(sh, delta)
	}
}

// readHeld is ActionGet of st.Key under its shard's lock: N and Found as
// GetInto returns them, the value copied into st.Dst now if its block is
// recyclable (it may be rewritten once the lock is released), else
// returned, to be copied with no lock held (its value never changes).
// Caller holds sh.mu.
func (s *Store) readHeld(sh *shard, h uint32, kind KeyKind, st *Step, c *clock) block {
	b, _ := s.live(sh, h, st.Key, c)
	if b == nil {
		sh.c.misses++
		return nil
	}
	touch(b, s.lru.Load())
	if kind == KindSession && !blockFlags(b, flagRead) {
		s.markRead(sh, b, h)
	}
	sh.c.hits++
	st.N, st.Found = logicalLen(b), true
	if st.N > len(st.Dst) {
		return nil
	}
	if recyclable(b) {
		readInto(b, st.Dst[:st.N])
		return nil
	}
	return b
}

// retime gives the live entry b of key (of kind, hashing to h) the expiry
// at (0: none), keeping its tallies and the expiry heap in step. Caller
// holds sh.mu.
func (s *Store) retime(sh *shard, b block, kind KeyKind, h uint32, at int64) {
	s.tally(sh, b, kind, h, -1)
	sh.noteExpiry(blockExpireAt(b), h, false)
	setBlockExpireAt(b, at)
	sh.noteExpiry(at, h, true)
	s.tally(sh, b, kind, h, 1)
}
