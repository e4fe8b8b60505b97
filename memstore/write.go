// The write path: every write of the store goes through install, which
// decides its condition, reserves its memory and swaps its block in under
// the shard lock; putEntry and removeAt keep a shard's table, counters,
// expiry items and tallies in step.

package memstore

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ephpm/ephpm/contract"
)

// writeReq is one write for install: the entry to store and the condition
// it is stored under.
type writeReq struct {
	key   string
	value []byte
	flags uint32
	// at is the expiry of a modeSet write (0: none).
	at   int64
	mode writeMode
	// ttl of a conditional write, counted from the moment the condition
	// is decided (under the lock), not from when the request was made.
	ttl time.Duration
	// b is the block built before taking the lock, or nil: a small plain
	// value is written under the lock, into a reused block (see place).
	b block
	// modeLock (rwlock.go): the step, its mode, an exclusive attempt's
	// claim, and the token; then what the decision granted, whether the
	// grant mints its fence (into fence: fence.go; also a modeSetNX grant,
	// a Step that only acquires: applystep.go), and whom it wakes.
	// Scalars, not a pointer: install leaks what its request points to,
	// which would put every lock step on the heap.
	token     []byte
	mintFence bool
	fence     int64
	claim     time.Duration
	lockOp    lockOp
	lockMode  uint8
	lockWake  uint8
	granted   bool
	// modeIncr: what is added to the stored counter, and the sum stored,
	// whose decimal digits are digits[:ndigits] (value is unused). A slice
	// of a caller's buffer kept in the request would move that buffer to
	// the heap.
	delta, sum int64
	digits     [20]byte
	ndigits    int
}

// writeMode says under which condition install stores the block.
type writeMode int

const (
	modeSet   writeMode = iota // always
	modeSetNX                  // only if key holds no live entry
	// modeIncr stores the live counter plus delta (keeping its flags and
	// expiry), or delta with a TTL of ttl if there is none: the value is
	// decided under the lock.
	modeIncr
	// modeLock stores, removes or keeps the entry as a read/write lock
	// decision made under the lock says (rwlock.go), and wakes as it says.
	modeLock
)

// prepare builds r's block now, with no lock held, if its value is large
// or compressed; a small plain one is written under the lock (see place).
// Callers fill their request field by field and prepare completes it in
// place: a request returned by value, or written as a composite literal,
// is built aside and copied (120 bytes in 8- and 16-byte moves), and the
// copy stalls on store forwarding (docs/measurements.md, "kv: write requests").
func (s *Store) prepare(r *writeReq) {
	if !s.buildsPlainSmall(r.key, r.value) {
		r.b = s.build(r.key, r.value, r.flags, r.at)
	}
}

// install stores r's entry if r's condition holds, and reports whether it
// did. It reserves the memory the entry needs beyond what the entry it
// replaces frees (evicting, if the policy allows, with no lock held) and
// only then swaps the blocks, so a write that does not fit changes nothing.
// A write conditioned on another key (a guard, a fence) is a Step
// (applystep.go), which holds both shards.
func (s *Store) install(r *writeReq) (bool, error) {
	sh, h, kind := s.locate(r.key)
	value := r.value
	size := int64(valueOffset(len(r.key))+len(value)) + entryOverhead
	if r.b != nil {
		size = int64(blockSize(r.b)) + entryOverhead
	}
	var g grant
	for attempt := 0; ; attempt++ {
		sh.mu.Lock()
		c := clock{s: s}
		i := sh.t.find(h, r.key)
		var old block
		if i >= 0 {
			old = sh.t.blocks[i]
		}
		oldExpired := old != nil && c.expired(old)
		ok := true
		switch r.mode {
		case modeSetNX:
			ok = old == nil || oldExpired
		case modeIncr:
			if err := s.decideSum(r, old, oldExpired, &c, &sh.mu); err != nil {
				sh.mu.Unlock()
				s.giveBack(&g) // a retry found the value changed
				return false, err
			}
			value = r.digits[:r.ndigits]
			size = int64(valueOffset(len(r.key))+len(value)) + entryOverhead
		case modeLock:
			var err error
			if ok, err = s.decideLock(sh, i, r, old, oldExpired, &c); err != nil {
				sh.mu.Unlock()
				s.giveBack(&g)
				return false, err
			}
			value = r.value
			size = int64(valueOffset(len(r.key))+len(value)) + entryOverhead
		}
		delta, need := size, size
		if old != nil {
			delta -= blockCost(old)
			if !oldExpired {
				need = delta // else the sweep in makeRoom removes old
			}
		}
		short := fits
		switch {
		case !ok:
		case kind != contract.KindSession && g.store == 0: // the common case, inline
			if !s.charge(sh, delta) {
				short = storeFull
			}
		default:
			short = s.reserve(sh, kind, delta, &g)
		}
		reserved := ok && short == fits
		if reserved {
			at := r.at
			if r.mode == modeSetNX {
				at = c.after(r.ttl)
			}
			flags := r.flags
			if oldExpired {
				sh.c.expirations++
			} else if kind == contract.KindSession && old != nil {
				flags |= blockMeta(old) & flagRead // the same session, rewritten
			}
			s.putEntry(sh, old, i, h, kind, r.b, r.key, value, flags, at)
			if r.mintFence {
				r.fence = s.mint(sh, r.key)
			}
			if r.mode == modeLock {
				sh.wake(r.key, contract.LockWake(r.lockWake))
			}
		}
		switch {
		case r.mode == modeSetNX && !ok:
			sh.c.setNXLosses++
		case r.mode == modeSetNX && reserved:
			sh.c.setNXWins++
		case r.mode == modeLock:
			sh.countLock(r, !ok || reserved)
		case reserved && r.mode != modeIncr && r.mode != modeLock:
			sh.c.sets++
		}
		sh.mu.Unlock()
		if !ok || reserved {
			s.giveBack(&g) // a retried condition may fail
			return ok, nil
		}
		var err error
		if g, err = s.makeRoom(need, keep{r.key, ""}, kind, short, attempt); err != nil {
			return false, err
		}
	}
}

// decideSum fills r's value, flags and expiry for modeIncr from key's
// current entry old: its counter plus r.delta, keeping old's pin, read mark
// and expiry, or r.delta itself, expiring r.ttl after c's now (0: never),
// if old is missing or expired. It fails as AddToCounter does. Caller holds
// the key's shard lock mu, and releases it explicitly (see
// logicalValueHeld): old may be a recyclable block, and the error quotes
// it.
func (s *Store) decideSum(r *writeReq, old block, oldExpired bool, c *clock, mu *sync.Mutex) error {
	if old != nil && !oldExpired {
		sum, err := contract.AddToCounter(logicalValueHeld(old, mu, nil), r.delta)
		if err != nil {
			return err
		}
		r.sum, r.flags, r.at = sum, blockMeta(old)&(flagPinned|flagRead), blockExpireAt(old)
	} else {
		r.sum, r.flags, r.at = r.delta, s.pinFlag(r.key), 0
		if r.ttl != 0 {
			r.at = c.now() + int64(r.ttl)
		}
	}
	r.ndigits = len(strconv.AppendInt(r.digits[:0], r.sum, 10))
	return nil
}

// lockOrder returns the shards of a two-key operation in the order they
// are locked: by address, so that two such operations never deadlock; second
// is nil when both keys live in one shard.
func lockOrder(a, b *shard) (first, second *shard) {
	switch {
	case a == b:
		return a, nil
	case uintptr(unsafe.Pointer(b)) < uintptr(unsafe.Pointer(a)):
		return b, a
	}
	return a, b
}

// mutexOf is sh's mutex, or nil for no shard (lockOrder's second of one).
func mutexOf(sh *shard) *sync.Mutex {
	if sh == nil {
		return nil
	}
	return &sh.mu
}

// place returns the block for key's new entry with a stored value of n
// bytes, and the slice to write that value into: old (key's current block)
// itself when it can be reused in place, else the shard's spare block, else
// a new one. Nobody reads a recyclable block without the shard lock, so
// rewriting one under the lock is invisible. Caller holds sh.mu.
func (s *Store) place(sh *shard, old block, key string, n int, flags uint32, expireAt int64) (block, []byte) {
	size := valueOffset(len(key)) + n
	access := s.lru.Load()
	switch {
	case reusable(old, size):
		return initBlock(old, key, n, flags, expireAt, access)
	case reusable(sh.spare, size):
		b := sh.spare
		sh.spare = nil
		return initBlock(b, key, n, flags, expireAt, access)
	}
	return newBlock(key, n, flags, expireAt, access)
}

// putEntry puts key (of kind) 's new entry, expiring at at (0: never), in
// slot i in place of old, or as a new entry when old is nil: b if it was
// built before the lock (it gets flags' flagRead), else value written now
// into old itself, the shard's spare or a new block (see place). It keeps
// the expiry heap, the eviction totals and the spare block in step. Caller
// holds sh.mu and has charged the memory.
func (s *Store) putEntry(sh *shard, old block, i int, h uint32, kind contract.KeyKind, b block, key string, value []byte, flags uint32, at int64) {
	var oldAt int64
	if old != nil {
		oldAt = blockExpireAt(old) // before place may rewrite old itself
		if kind == contract.KindSession {
			s.tallySession(sh, old, h, -1)
		} else {
			sh.tallyPlain(old, -1)
		}
	}
	if b == nil {
		var dst []byte
		b, dst = s.place(sh, old, key, len(value), flags, at)
		copy(dst, value)
	} else {
		setBlockExpireAt(b, at)
		if flags&flagRead != 0 {
			atomic.OrUint32(blockMetaPtr(b), flagRead)
		}
	}
	if old != nil {
		sh.t.blocks[i] = b
		sh.noteExpiry(oldAt, h, false)
		if b != old {
			sh.recycle(old)
		}
	} else {
		var data block
		if kind == contract.KindSessionLock {
			data = s.untallyData(sh, h, key)
		}
		sh.t.add(h, b)
		if data != nil {
			s.tallySession(sh, data, h, 1) // now held
		}
	}
	sh.noteExpiry(at, h, true)
	if kind == contract.KindSession {
		s.tallySession(sh, b, h, 1)
	} else {
		sh.tallyPlain(b, 1)
	}
}

// recycle keeps b, just taken out of the table, as the shard's spare if it
// is recyclable and there is none. Caller holds sh.mu.
func (sh *shard) recycle(b block) {
	if sh.spare == nil && recyclable(b) {
		sh.spare = b
	}
}

// removeAt deletes the entry in slot i and wakes the oldest caller waiting
// for its key. Caller holds sh.mu.
func (s *Store) removeAt(sh *shard, i int, expired bool) {
	b, h := sh.t.blocks[i], sh.t.hashes[i]
	kind := s.sess.Kind(blockKey(b))
	if kind == contract.KindSession {
		s.tallySession(sh, b, h, -1)
	} else {
		sh.tallyPlain(b, -1)
	}
	var data block
	if kind == contract.KindSessionLock {
		data = s.untallyData(sh, h, blockKey(b))
	}
	sh.t.removeAt(i)
	if data != nil {
		s.tallySession(sh, data, h, 1) // no longer held
	}
	sh.noteExpiry(blockExpireAt(b), h, false)
	s.charge(sh, -blockCost(b))
	if kind == contract.KindSession {
		s.releaseSession(sh, blockCost(b))
	}
	if expired {
		sh.c.expirations++
	}
	if len(sh.waiters) != 0 {
		sh.wakeOne(blockKey(b))
	}
	sh.recycle(b)
}

// pinFlag returns flagPinned for a key never evicted: under a pinned prefix
// or the session lock prefix. key is not empty. It is small enough to
// inline: for most keys it is a length and a one-byte test.
func (s *Store) pinFlag(key string) uint32 {
	if len(s.pinned) == 0 && !s.sess.MayBeSession(key[0]) {
		return 0
	}
	return s.pinFlagOf(key)
}

func (s *Store) pinFlagOf(key string) uint32 {
	if s.isPinnedKey(key) || s.sess.Kind(key) == contract.KindSessionLock {
		return flagPinned
	}
	return 0
}
