// The in-process store's Step: a contract.Step applied under the shard
// locks of its lock and its key, with install's reservation and putEntry.

package memstore

import (
	"sync"
	"unsafe"

	"github.com/ephpm/ephpm/contract"
)

// Step applies st (see Step) under the shard locks of its lock and its
// key, taken in address order as every two-key write takes them (a
// session's data and lock share one shard): contract.ApplyStep decides
// the acquire or the guard, the action and the release as one step. Each
// entry it writes is charged as it is put, an acquire's lock first; a
// write that does not fit takes the lock just put away again, so the step
// makes room with no lock held and is decided again, as install does, and
// fails with nothing changed if it cannot. A value read is copied under
// the lock when its block is recyclable, else after it, as GetInto
// copies.
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
	var v stepView
	v.s, v.st = s, st
	if st.Action != contract.ActionNone {
		v.sh, v.h, v.kind = s.locate(st.Key)
	}
	if useLock {
		v.lsh, v.lh, v.lkind = s.locate(st.Lock)
	}
	if v.sh == nil {
		v.sh = v.lsh
	} else if v.lsh == nil {
		v.lsh = v.sh
	}
	first, second := lockOrder(v.sh, v.lsh)
	v.mu1, v.mu2 = &first.mu, mutexOf(second)

	// The entries the step may write, built before the lock as install
	// builds its own (see prepare): the value, and an acquire's lock.
	if st.Action == contract.ActionSet {
		v.flags = s.pinFlag(st.Key)
		v.size = int64(valueOffset(len(st.Key))+len(st.Value)) + entryOverhead
		if !s.buildsPlainSmall(st.Key, st.Value) {
			v.b, v.size = s.prebuild(st.Key, st.Value, v.flags)
		}
	}
	if st.Acquire {
		v.lsize = int64(valueOffset(len(st.Lock))+len(st.Token)) + entryOverhead
		if !s.buildsPlainSmall(st.Lock, st.Token) {
			v.lb, v.lsize = s.prebuild(st.Lock, st.Token, flagPinned)
		}
	}
	for attempt := 0; ; attempt++ {
		first.mu.Lock()
		if second != nil {
			second.mu.Lock()
		}
		v.c = clock{s: s}
		n, short := contract.ApplyStep(st, v.engine())
		v.count(n)
		if second != nil {
			second.mu.Unlock()
		}
		first.mu.Unlock()
		if !short {
			if attempt > 0 { // only makeRoom grants
				s.giveBack(&v.g)
				s.giveBack(&v.lg)
			}
			if v.read != nil {
				readInto(v.read, st.Dst[:st.N])
			}
			return nil
		}
		var err error
		if v.lockShort {
			v.lg, err = s.makeRoom(v.lsize, keep{st.Lock, st.Key}, v.lkind, v.short, attempt)
		} else {
			v.g, err = s.makeRoom(v.need, keep{st.Key, st.Lock}, v.kind, v.short, attempt)
		}
		if err != nil {
			s.giveBack(&v.g)
			s.giveBack(&v.lg)
			return err
		}
	}
}

// stepView is a Step's hold on the shards of its lock (lsh) and its key
// (sh) for contract.ApplyStep, its contract.StepEngine: what applyStep
// located and built before taking their locks, what a lookup under them
// found for the put that follows it, and what the last write that did not
// fit needs made. Its methods are called with both shards' locks held.
type stepView struct {
	s           *Store
	st          *contract.Step
	sh, lsh     *shard
	h, lh       uint32
	kind, lkind contract.KeyKind
	mu1, mu2    *sync.Mutex // the locks held, for valueEqualsHeld
	c           clock

	// The value's entry (b: built before the lock, or nil) and the
	// lock's, and what each is charged.
	b, lb       block
	size, lsize int64
	flags       uint32

	// What KeyEntry and LockEntry found: the slot (-1: none) and the block.
	oi, li    int
	old, lold block

	// g and lg: room makeRoom made for the value and for the lock.
	g, lg grant
	// The write that did not fit: the lock's, or the value's, needing
	// need more bytes; short says which limit refused it.
	lockShort bool
	need      int64
	short     shortfall

	read block // a value to copy once the locks are released
}

// engine is v as contract.ApplyStep's engine. Through the interface the
// compiler cannot see that ApplyStep keeps nothing of v past the call
// (its contract), and would put every step's view on the heap; so v is
// passed hidden from escape analysis, as backend.Run passes a Step. The
// result is to be passed at once, never kept: it is made from a uintptr,
// which a stack that grows and moves (makeRoom's) leaves pointing at the
// old one.
//
// It makes no call between taking v's address as a uintptr and making it
// a pointer again (see backend.Hide): go:nocheckptr keeps checkptr's out.
//
//go:nocheckptr
func (v *stepView) engine() contract.StepEngine {
	p := uintptr(unsafe.Pointer(v))
	return *(**stepView)(unsafe.Pointer(&p))
}

func (v *stepView) LockEntry() contract.EntryState {
	v.li, v.lold = v.lsh.t.find(v.lh, v.st.Lock), nil
	if v.li >= 0 {
		v.lold = v.lsh.t.blocks[v.li]
	}
	return v.state(v.lold)
}

// state is b's state (nil: none) at v's clock.
func (v *stepView) state(b block) contract.EntryState {
	switch {
	case b == nil:
		return contract.NoEntry
	case v.c.expired(b):
		return contract.LapsedEntry
	}
	return contract.LiveEntry
}

func (v *stepView) PutLock() bool {
	// lold, if any, has lapsed: a lock that does not fit needs its whole
	// size made (makeRoom's sweep removes lold).
	delta := v.lsize
	if v.lold != nil {
		delta -= blockCost(v.lold)
	}
	if short := v.reserve(v.lsh, v.lkind, delta, &v.lg); short != fits {
		v.lockShort, v.short = true, short
		return false
	}
	v.s.putEntry(v.lsh, v.lold, v.li, v.lh, v.lkind, v.lb, v.st.Lock, v.st.Token, flagPinned, v.c.after(v.st.LockTTL))
	return true
}

// reserve is Store.reserve with the common case inline: a grant is only
// makeRoom's, on a retry, and session data has a budget of its own.
func (v *stepView) reserve(sh *shard, kind contract.KeyKind, delta int64, g *grant) shortfall {
	if kind != contract.KindSession && g.store == 0 {
		if !v.s.charge(sh, delta) {
			return storeFull
		}
		return fits
	}
	return v.s.reserve(sh, kind, delta, g)
}

// DropLock's removal wakes a waiter for the lock, if any, to find it
// free, as it is.
func (v *stepView) DropLock() {
	if i := v.lsh.t.find(v.lh, v.st.Lock); i >= 0 {
		v.s.removeAt(v.lsh, i, false)
	}
}

func (v *stepView) MintFence() int64 { return v.s.mint(v.lsh, v.st.Lock) }

func (v *stepView) LockHolder() (held, byToken bool) {
	b := v.lsh.t.get(v.lh, v.st.Lock)
	if b == nil || v.c.expired(b) {
		return false, false
	}
	return true, valueEqualsHeld(b, v.st.Token, v.mu1, v.mu2)
}

func (v *stepView) LatestFence() (int64, bool) {
	return v.lsh.fences.current(v.s.fenceHash(v.st.Lock))
}

func (v *stepView) ReleaseLock() bool {
	b, i := v.s.live(v.lsh, v.lh, v.st.Lock, &v.c)
	if b == nil || !valueEqualsHeld(b, v.st.Token, v.mu1, v.mu2) {
		return false
	}
	v.s.removeAt(v.lsh, i, false)
	return true
}

func (v *stepView) KeyEntry() (contract.EntryState, contract.KeyKind) {
	v.oi, v.old = v.sh.t.find(v.h, v.st.Key), nil
	if v.oi >= 0 {
		v.old = v.sh.t.blocks[v.oi]
	}
	return v.state(v.old), v.kind
}

func (v *stepView) PutValue(keepRead bool) bool {
	// As install charges: an old entry that has lapsed frees nothing
	// here (makeRoom's sweep removes it).
	delta, need := v.size, v.size
	if v.old != nil {
		delta -= blockCost(v.old)
		if !v.c.expired(v.old) {
			need = delta
		}
	}
	if short := v.reserve(v.sh, v.kind, delta, &v.g); short != fits {
		v.lockShort, v.need, v.short = false, need, short
		return false
	}
	flags := v.flags
	if keepRead {
		flags |= blockMeta(v.old) & flagRead
	}
	v.s.putEntry(v.sh, v.old, v.oi, v.h, v.kind, v.b, v.st.Key, v.st.Value, flags, v.c.after(v.st.TTL))
	return true
}

// GetValue copies the value into Dst now if its block is recyclable (it
// may be rewritten once the lock is released), else leaves it in v.read,
// to be copied with no lock held (its value never changes).
func (v *stepView) GetValue() (n int, found bool) {
	b, _ := v.s.live(v.sh, v.h, v.st.Key, &v.c)
	if b == nil {
		return 0, false
	}
	touch(b, v.s.lru.Load())
	if v.kind == contract.KindSession && !blockFlags(b, flagRead) {
		v.s.markRead(v.sh, b, v.h)
	}
	n = logicalLen(b)
	switch {
	case n > len(v.st.Dst):
	case recyclable(b):
		readInto(b, v.st.Dst[:n])
	default:
		v.read = b
	}
	return n, true
}

func (v *stepView) DelKey() contract.EntryState {
	i := v.sh.t.find(v.h, v.st.Key)
	if i < 0 {
		return contract.NoEntry
	}
	state := v.state(v.sh.t.blocks[i])
	v.s.removeAt(v.sh, i, false) // a lapsed entry is counted by ApplyStep
	return state
}

func (v *stepView) ExpireKey() bool {
	b, _ := v.s.live(v.sh, v.h, v.st.Key, &v.c)
	if b == nil {
		return false
	}
	v.s.retime(v.sh, b, v.kind, v.h, v.c.after(v.st.TTL))
	return true
}

// count adds the counters n (contract.StepCounts) to their shards.
func (v *stepView) count(n contract.StepCounts) {
	lc, c := &v.lsh.c, &v.sh.c
	if n&contract.CountSetNXWin != 0 {
		lc.setNXWins++
	}
	if n&contract.CountSetNXLoss != 0 {
		lc.setNXLosses++
	}
	if n&contract.CountDelIfEqMatch != 0 {
		lc.delIfEqMatches++
	}
	if n&contract.CountDelIfEqMismatch != 0 {
		lc.delIfEqMismatches++
	}
	if n&contract.CountLockExpiration != 0 {
		lc.expirations++
	}
	if n&contract.CountSet != 0 {
		c.sets++
	}
	if n&contract.CountExpiration != 0 {
		c.expirations++
	}
	if n&contract.CountHit != 0 {
		c.hits++
	}
	if n&contract.CountMiss != 0 {
		c.misses++
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
