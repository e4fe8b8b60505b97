// The in-process store's Step: a contract.Step applied under the shard
// locks of its lock and its key, with install's reservation and putEntry.

package memstore

import "github.com/ephpm/ephpm/contract"

// Step applies st (see Step) under the shard locks of its lock and its
// key, taken in address order as every two-key write takes them (a
// session's data and lock share one shard): the acquire or the guard,
// the action and the release are one step. The entries it writes (the
// lock an acquire stores, the value of ActionSet) are charged before any
// is put, so a step that does not fit makes room with no lock held and is
// decided again, as install does, and fails with nothing changed if it
// cannot. A value read is copied under the lock when its block is
// recyclable, else after it, as GetInto copies.
func (s *Store) Step(st *contract.Step) error {
	if st.Acquire && st.Action == contract.ActionNone && st.Guard == contract.GuardNone && !st.Release {
		// CheckStep of a step that only acquires, inline.
		st.Reset()
		if err := contract.CheckWrite(st.Lock, st.Token, st.LockTTL); err != nil {
			return err
		}
		return s.acquireOnly(st)
	}
	st.Reset()
	if err := contract.CheckStep(st); err != nil {
		return err
	}
	return s.applyStep(st)
}

// applyStep is Step of a checked st that does more than acquire.
func (s *Store) applyStep(st *contract.Step) error {
	useLock := st.UsesLock()
	if !useLock && st.Action == contract.ActionNone {
		st.Held = true
		return nil
	}
	var sh, lsh *shard
	var h, lh uint32
	var kind, lkind contract.KeyKind
	if st.Action != contract.ActionNone {
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
	if st.Action == contract.ActionSet {
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
			case contract.GuardToken:
				gb := lsh.t.get(lh, st.Lock)
				held = gb != nil && !c.expired(gb) && valueEqualsHeld(gb, st.Token, mu1, mu2)
			case contract.GuardFence, contract.GuardFenceHolder:
				n, known := lsh.fences.current(s.fenceHash(st.Lock))
				held = known && n == st.Fence &&
					!(st.Guard == contract.GuardFenceHolder && heldByAnother(lsh, lh, st.Lock, st.Token, &c, mu1, mu2))
			}
		}
		if !held {
			if st.Acquire {
				lsh.c.setNXLosses++
				st.Outcome = contract.Exists
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
		if st.Action == contract.ActionSet {
			if oi = sh.t.find(h, st.Key); oi >= 0 {
				old = sh.t.blocks[oi]
			}
		}
		var delta, need, lneed int64
		short, lshort := fits, fits
		// As install charges (an expired old entry is swept by makeRoom:
		// it frees nothing here), the common case inline.
		if st.Action == contract.ActionSet {
			delta, need = size, size
			if old != nil {
				delta -= blockCost(old)
				if !c.expired(old) {
					need = delta
				}
			}
			if kind != contract.KindSession && g.store == 0 {
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
			if lkind != contract.KindSession && lg.store == 0 {
				if !s.charge(lsh, ldelta) {
					lshort = storeFull
				}
			} else {
				lshort = s.reserve(lsh, lkind, ldelta, &lg)
			}
		}
		if short != fits || lshort != fits {
			if short == fits && st.Action == contract.ActionSet {
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
			st.Outcome = contract.Inserted
		}
		var read block // a value to copy once the locks are released
		switch st.Action {
		case contract.ActionSet:
			if old != nil && st.Acquire && sh == lsh {
				oi = sh.t.find(h, st.Key) // the lock's put may have moved it
			}
			if old != nil && c.expired(old) {
				sh.c.expirations++
			} else if kind == contract.KindSession && old != nil {
				flags |= blockMeta(old) & flagRead // the same session, rewritten
			}
			s.putEntry(sh, old, oi, h, kind, b, st.Key, st.Value, flags, c.after(st.TTL))
			sh.c.sets++
			st.Done = true
		case contract.ActionGet:
			st.Done = true
			read = s.readHeld(sh, h, kind, st, &c)
		case contract.ActionDel:
			if i := sh.t.find(h, st.Key); i >= 0 {
				expired := c.expired(sh.t.blocks[i])
				s.removeAt(sh, i, expired)
				st.Done = !expired
			}
		case contract.ActionExpire:
			if v, _ := s.live(sh, h, st.Key, &c); v != nil {
				s.retime(sh, v, kind, h, c.after(st.TTL))
				st.Done = true
			}
		}
		if st.Release && (st.Action != contract.ActionExpire || st.Done) {
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

// acquireOnly is a Step that only takes its lock (SetNXFenced, and each
// attempt of a fenced wait): SetNX's install on one shard, minting the
// fence in the grant's step when st.Fenced. install is the lock path at its
// leanest (one shard, no action or guard to decide), and the fenced grant
// through it costs what it did before Step.
func (s *Store) acquireOnly(st *contract.Step) error {
	var r writeReq
	r.key, r.value, r.flags, r.mode, r.ttl = st.Lock, st.Token, flagPinned, modeSetNX, st.LockTTL
	r.mintFence = st.Fenced
	s.prepare(&r)
	ok, err := s.install(&r)
	if err != nil {
		return err
	}
	st.Held = ok
	if ok {
		st.Outcome, st.Fence = contract.Inserted, r.fence
	} else {
		st.Outcome = contract.Exists
	}
	return nil
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
func (s *Store) unreserve(sh *shard, kind contract.KeyKind, delta int64) {
	s.charge(sh, -delta)
	if kind == contract.KindSession {
		s.releaseSession(sh, delta)
	}
}

// readHeld is ActionGet of st.Key under its shard's lock: N and Found as
// GetInto returns them, the value copied into st.Dst now if its block is
// recyclable (it may be rewritten once the lock is released), else
// returned, to be copied with no lock held (its value never changes).
// Caller holds sh.mu.
func (s *Store) readHeld(sh *shard, h uint32, kind contract.KeyKind, st *contract.Step, c *clock) block {
	b, _ := s.live(sh, h, st.Key, c)
	if b == nil {
		sh.c.misses++
		return nil
	}
	touch(b, s.lru.Load())
	if kind == contract.KindSession && !blockFlags(b, flagRead) {
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
func (s *Store) retime(sh *shard, b block, kind contract.KeyKind, h uint32, at int64) {
	s.tally(sh, b, kind, h, -1)
	sh.noteExpiry(blockExpireAt(b), h, false)
	setBlockExpireAt(b, at)
	sh.noteExpiry(at, h, true)
	s.tally(sh, b, kind, h, 1)
}
