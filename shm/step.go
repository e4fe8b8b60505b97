package shm

import (
	"sync/atomic"
	"unsafe"

	"github.com/ephpm/ephpm/contract"
)

// Step applies st (contract.Step) with the shards of its lock and its key held
// (lockTwo: a session's data and lock share one shard), so that
// contract.ApplyStep decides the acquire or the guard, the action and the
// release as one step, as install's writes are. An acquire's lock is put
// first, then the value of ActionSet: a value that does not fit takes the
// lock just put away again (its old entry, if any, had lapsed: gone either
// way) before the step makes room with no lock held and is decided again,
// so a step that cannot fit fails with nothing changed. A grant with
// st.Bound records this process as the lock's holder (entry.go). A fenced
// step maps the fence table first: a table that cannot be made fails it
// with nothing done.
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
	var v stepView
	v.s, v.st = s, st
	if st.Fenced || st.Guard == contract.GuardFence || st.Guard == contract.GuardFenceHolder {
		if v.ft, err = s.fences(); err != nil {
			return err
		}
	}
	tk, err := s.enter()
	if err != nil {
		return err
	}
	defer s.leave(tk)
	on, minSize := s.compression()

	if st.Action != contract.ActionNone {
		v.sh, v.h, v.tag = s.locate(st.Key)
	}
	if useLock {
		v.lsh, v.lh, v.ltag = s.locate(st.Lock)
	}
	if v.sh == nil {
		v.sh = v.lsh
	} else if v.lsh == nil {
		v.lsh = v.sh
	}
	sh, lsh := v.sh, v.lsh
	// The entries the step may write, field by field (see install).
	if st.Action == contract.ActionSet {
		stored, cflag := storedForm(st.Value, on, minSize)
		w := &v.w
		w.key, w.kind, w.h, w.tag, w.stored, w.flags = st.Key, s.g.kindOf(st.Key), v.h, v.tag, stored, s.pinFlag(st.Key)|cflag
	}
	if st.Acquire {
		stored, cflag := storedForm(st.Token, on, minSize)
		lw := &v.lw
		lw.key, lw.kind, lw.h, lw.tag, lw.stored, lw.flags = st.Lock, s.g.kindOf(st.Lock), v.lh, v.ltag, stored, flagPinned|cflag
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
		v.t = 0
		n, short := contract.ApplyStep(st, v.engine())
		v.count(n)
		if !short && st.Held {
			if st.Acquire {
				s.sweepSome(lsh, sweepPerWrite, &v.t)
			}
			if st.Action == contract.ActionSet {
				s.sweepSome(sh, sweepPerWrite, &v.t)
			}
		}
		locked = false
		s.unlockTwo(sh, lsh)
		if !short {
			return nil
		}
		if v.lockShort {
			err = s.retry(lsh, v.short, &v.lw, attempt)
		} else {
			err = s.retry(sh, v.short, &v.w, attempt)
		}
		if err != nil {
			return err
		}
	}
}

// stepView is a Step's hold on the shards of its lock (lsh) and its key
// (sh) for contract.ApplyStep, its contract.StepEngine: what Step located
// and prepared before taking their locks, what a lookup under them found
// for the put that follows it, and which write did not fit and why. Its
// methods are called with both shards' locks held.
type stepView struct {
	s         *Store
	st        *contract.Step
	ft        *fenceTable // mapped for a fenced grant or a fence guard
	sh, lsh   *shard
	h, lh     uint64
	tag, ltag uint32
	t         int64 // the attempt's clock (see clockAt)

	// The entries the step may write: the value's and the lock's.
	w, lw write

	// What KeyEntry and LockEntry found (see put).
	pos, lpos, ins, lins int
	old, lold            int64
	room, lroom          bool

	// The write that did not fit: the lock's, or the value's, and why.
	lockShort bool
	short     room
}

// engine is v as contract.ApplyStep's engine. Through the interface the
// compiler cannot see that ApplyStep keeps nothing of v past the call
// (its contract), and would put every step's view on the heap; so v is
// passed hidden from escape analysis, as backend.Run passes a Step. The
// result is to be passed at once, never kept: it is made from a uintptr,
// which a stack that grows and moves (retry's) leaves pointing at the
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
	v.lroom = v.lsh.roomFor()
	v.lpos, v.lold, v.lins = v.lsh.lookup(v.ltag, v.st.Lock)
	return v.state(v.lsh, v.lold)
}

// state is b's state (noBlock: none) in sh at v's clock.
func (v *stepView) state(sh *shard, b int64) contract.EntryState {
	switch {
	case b == noBlock:
		return contract.NoEntry
	case v.s.lapsed(sh, b, &v.t):
		return contract.LapsedEntry
	}
	return contract.LiveEntry
}

func (v *stepView) PutLock() bool {
	v.lw.expireAt = 0
	if v.st.LockTTL != 0 {
		v.lw.expireAt = clockAt(&v.t) + int64(v.st.LockTTL)
	}
	if r := v.s.put(v.lsh, &v.lw, v.lpos, v.lold, v.lins, v.lroom); r != fits {
		v.lockShort, v.short = true, r
		return false
	}
	return true
}

func (v *stepView) DropLock() {
	if pos, b, _ := v.lsh.lookup(v.ltag, v.st.Lock); pos >= 0 {
		v.s.removeEntry(v.lsh, pos, b, v.lh)
	}
}

func (v *stepView) MintFence() int64 { return v.ft.mint(v.lh) }

func (v *stepView) LockHolder() (held, byToken bool) {
	_, b := v.s.live(v.lsh, v.lh, v.ltag, v.st.Lock, &v.t)
	if b == noBlock {
		return false, false
	}
	return true, v.lsh.valueEquals(b, v.st.Token)
}

func (v *stepView) LatestFence() (int64, bool) { return v.ft.current(v.lh) }

func (v *stepView) ReleaseLock() bool {
	pos, b := v.s.live(v.lsh, v.lh, v.ltag, v.st.Lock, &v.t)
	if b == noBlock || !v.lsh.valueEquals(b, v.st.Token) {
		return false
	}
	v.s.removeEntry(v.lsh, pos, b, v.lh)
	return true
}

func (v *stepView) KeyEntry() (contract.EntryState, contract.KeyKind) {
	v.room = v.sh.roomFor()
	v.pos, v.old, v.ins = v.sh.lookup(v.tag, v.st.Key)
	return v.state(v.sh, v.old), v.w.kind
}

func (v *stepView) PutValue(keepRead bool) bool {
	w := &v.w
	w.expireAt = 0
	if v.st.TTL != 0 {
		w.expireAt = clockAt(&v.t) + int64(v.st.TTL)
	}
	w.flags &^= flagRead
	if keepRead {
		w.flags |= v.sh.entryMeta(v.old) & flagRead
	}
	if r := v.s.put(v.sh, w, v.pos, v.old, v.ins, v.room); r != fits {
		v.lockShort, v.short = false, r
		return false
	}
	return true
}

func (v *stepView) GetValue() (int, bool) {
	return v.s.readLocked(v.sh, v.h, v.tag, v.st.Key, v.st.Dst, &v.t)
}

func (v *stepView) DelKey() contract.EntryState {
	pos, b, _ := v.sh.lookup(v.tag, v.st.Key)
	if pos < 0 {
		return contract.NoEntry
	}
	state := contract.LiveEntry
	if expired(v.sh.entryExpireAt(b), &v.t) {
		state = contract.LapsedEntry
	}
	v.s.removeEntry(v.sh, pos, b, v.h)
	return state
}

func (v *stepView) ExpireKey() bool {
	_, b := v.s.live(v.sh, v.h, v.tag, v.st.Key, &v.t)
	if b == noBlock {
		return false
	}
	v.s.retime(v.sh, b, v.st.Key, v.st.TTL, &v.t)
	return true
}

// count adds the counters n (contract.StepCounts) to their shards.
func (v *stepView) count(n contract.StepCounts) {
	lsh, sh := v.lsh, v.sh
	if n&contract.CountSetNXWin != 0 {
		lsh.count(cSetNXWins)
	}
	if n&contract.CountSetNXLoss != 0 {
		lsh.count(cSetNXLosses)
	}
	if n&contract.CountDelIfEqMatch != 0 {
		lsh.count(cDelIfEqMatches)
	}
	if n&contract.CountDelIfEqMismatch != 0 {
		lsh.count(cDelIfEqMismatches)
	}
	if n&contract.CountLockExpiration != 0 {
		lsh.count(cExpirations)
	}
	if n&contract.CountSet != 0 {
		sh.count(cSets)
	}
	if n&contract.CountExpiration != 0 {
		sh.count(cExpirations)
	}
	if n&contract.CountHit != 0 {
		sh.countRead(cHits)
	}
	if n&contract.CountMiss != 0 {
		sh.countRead(cMisses)
	}
}

// readLocked is GetInto's read of key under sh's lock: its length and
// whether it was found, the value copied into dst if it fits. A hit
// stamps the entry's access and marks session data read; the caller
// counts it. Caller holds sh's lock.
func (s *Store) readLocked(sh *shard, h uint64, tag uint32, key string, dst []byte, t *int64) (n int, found bool) {
	_, b := s.live(sh, h, tag, key, t)
	if b == noBlock {
		return 0, false
	}
	if p := sh.entryAccess(b); atomic.LoadUint32(p) != s.lruClock(*t) {
		storeDerived32(p, s.lruClock(*t))
	}
	if sh.entryMeta(b)&flagRead == 0 && s.g.kindOf(key) == contract.KindSession {
		sh.markRead(b) // a returning user's session
	}
	n = sh.logicalLen(b)
	if n <= len(dst) {
		sh.readInto(b, dst[:n])
	}
	return n, true
}
