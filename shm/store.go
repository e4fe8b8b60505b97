// Package shm is ephpm's shared-memory store: the key-value store of package
// kv with the same contracts, kept in a named segment that every process
// mapping it shares (php-fpm workers, CLI scripts), and that survives any
// of them being killed at any instruction.
//
// The segment is a file /dev/shm/ephpm-NAME.UID mapped MAP_SHARED. Nothing
// in it is a Go pointer: every structure is addressed by offset and every
// shared word is read and written with sync/atomic. It is split into
// shards, each with its own lock word, hash index and heap; an operation on
// one key runs entirely under its shard's lock, so a decision and the change
// it leads to are one step no other process can interleave with. A process
// that dies holding a lock is detected by the waiters (lock.go), and its
// shard is recovered (recover.go) before anyone uses it: every entry then
// reads as its old or its new value, and nothing acknowledged is lost.
//
// See "The shared-memory store" in docs/design.md.
package shm

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // go:linkname

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/internal/coarse"
	"github.com/ephpm/ephpm/kv"
)

// Options configure Open.
type Options struct {
	// Dir holds the segment file; "" means /dev/shm.
	Dir string
	// Memory: Limit sizes a segment this call creates (0: DefaultMemoryLimit)
	// and must match an existing one's if nonzero; Policy, Compression and
	// CompressionMinSize are segment-wide and applied on every Open.
	Memory kv.MemoryConfig
	// PinnedPrefixes lists key prefixes whose entries this process writes
	// pinned: never evicted.
	PinnedPrefixes []string
	// SessionDataPrefix, SessionLockPrefix and SessionLimitName are kv's
	// (kv.Options): session data lives within Memory.SessionLimit, and
	// while its lock is there it is never evicted; session locks never
	// are. The prefixes are the segment's, fixed when this call makes it:
	// "" takes the segment's, others must be the same.
	SessionDataPrefix, SessionLockPrefix, SessionLimitName string
	// Anchor is the pid of the process the segment lives for (a php-fpm
	// master for its pool's segment), 0 for none: see lifecycle.go.
	Anchor int
	// Existing attaches to a segment that exists and is ready, as a tool
	// that looks at a server's segment does (the ephpm command): Open
	// creates no file (a missing one is an error wrapping os.ErrNotExist),
	// sweeps nothing, records no anchor, replaces no file (one of another
	// layout is refused, never made anew) and changes none of the
	// segment's settings (the segment keeps the policy, compression and
	// session budget its servers set), and never creates the fence file
	// for another uid's segment (a call that needs it then fails, having
	// done nothing). So Anchor and Memory, which say what to make and
	// set, must be zero with it: either is refused with
	// kv.ErrInvalidArgument.
	Existing bool
	// Owner, with Existing, is the uid whose segment NAME is
	// (/dev/shm/ephpm-NAME.OWNER): the file must be that uid's, 0600, as
	// every segment is. nil means the effective uid; UID(0) is root's
	// segment (a uid of 0 cannot stand for "mine", or nobody could name
	// root's). A process of another uid opens it only if the file's
	// permissions let it (root does). Without Existing it may only name
	// the effective uid: a segment this process makes is its own.
	Owner *int
}

// UID is an Options.Owner naming uid.
func UID(uid int) *int { return &uid }

// Store is one process's attachment to a segment. It is safe for
// concurrent use; Close detaches it.
type Store struct {
	g      *segment
	owner  int // the uid the segment file belongs to
	slot   int
	tag    uint32
	pinned []string
	shards []shard

	// ticket is what a call holds while it uses the mapping; Close takes
	// it away (nil: closed) and waits until no call holds it (enter).
	ticket atomic.Pointer[ticket]

	// fenceTab is the fence file's mapping, made on first use (fence.go).
	fenceMu  sync.Mutex
	fenceTab atomic.Pointer[fenceTable]
	// deadOwnerWait is the longest this process waited for a shard whose
	// owner had died: from the start of its wait until the shard was
	// recovered (ns).
	deadOwnerWait atomic.Int64

	// The check that the segment's file is still the one mapped
	// (removed.go): check is checkNotDue, checkDue (checkTimer marked it),
	// checkRunning or checkGone (final); gone is the error every call returns once the file
	// was found removed, or the header's hash seed changed (checkSeed).
	check      atomic.Uint32
	gone       atomic.Pointer[error]
	checkTimer *time.Timer
	// rateTimer is the next tick of the rate ring (rates.go).
	rateTimer atomic.Pointer[time.Timer]
}

var (
	errClosed = errors.New("shm: store closed")
	// ErrCorrupt: a shard's structures were found inconsistent, by
	// recovery or by a call's checks (checked.go); the shard serves no
	// more calls (its outcome would be unknown).
	ErrCorrupt = errors.New("shm: segment shard is corrupt")
)

// entryOverhead is what each entry is charged beyond its block: its index
// slot.
const entryOverhead = 8

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// now is CLOCK_MONOTONIC in ns: the same clock in every process. It times
// waits (lock words, Wait's deadline).
func now() int64 { return nanotime() }

// expiryNow is CLOCK_MONOTONIC_COARSE in ns, the clock of TTL deadlines
// and expiry checks: the same clock in every process, behind now by a lag
// the kernel does not bound (a tick or more), and a few loads to read
// (internal/coarse).
func expiryNow() int64 { return coarse.Now() }

// tick is expiryNow's resolution: the kernel's tick.
var tick = coarse.Resolution()

// Open attaches to the segment called name (1-64 of [A-Za-z0-9._-]),
// creating it if it does not exist.
func Open(name string, opts Options) (*Store, error) {
	if !namePattern.MatchString(name) {
		return nil, fmt.Errorf("%w: shared-memory segment name %q is not 1-64 of [A-Za-z0-9._-]", kv.ErrInvalidArgument, name)
	}
	cfg := opts.Memory
	if opts.Existing && (opts.Anchor != 0 || cfg != (kv.MemoryConfig{})) {
		return nil, fmt.Errorf("%w: Existing attaches to segment %s as it is: an anchor (%d) or a memory setting (%+v) "+
			"would make or change it", kv.ErrInvalidArgument, name, opts.Anchor, cfg)
	}
	if cfg.Policy < kv.NoEviction || cfg.Policy > kv.AllKeysLRU || cfg.CompressionMinSize < 0 || cfg.Limit < 0 {
		return nil, fmt.Errorf("%w: memory setting %+v", kv.ErrInvalidArgument, cfg)
	}
	var anchor uint64
	if opts.Anchor != 0 {
		if anchor = identOf(opts.Anchor); anchor == 0 {
			return nil, fmt.Errorf("shm: the anchor process %d of segment %s does not run", opts.Anchor, name)
		}
	}
	if err := checkSessionPrefixes(opts.SessionDataPrefix, opts.SessionLockPrefix); err != nil {
		return nil, err
	}
	owner := os.Geteuid()
	if opts.Owner != nil {
		if o := *opts.Owner; o < 0 || !opts.Existing && o != owner {
			return nil, fmt.Errorf("%w: owner uid %d: a segment is named by the uid it belongs to (>= 0), and one this "+
				"process makes belongs to its effective uid %d", kv.ErrInvalidArgument, o, owner)
		}
		owner = *opts.Owner
	}
	if !opts.Existing {
		sweep(opts.Dir)
	}
	g, err := openSegment(PathOf(opts.Dir, name, owner), cfg.Limit, anchor, opts.Existing, owner, func(g *segment) {
		initShards(g)
		g.writeSessionRule(opts.SessionDataPrefix, opts.SessionLockPrefix)
	})
	if err != nil {
		return nil, err
	}
	if err := g.readSessionRule(opts.SessionDataPrefix, opts.SessionLockPrefix, opts.SessionLimitName); err != nil {
		g.unmap()
		return nil, err
	}
	var budget int64
	if !opts.Existing {
		if budget, err = g.sess.Budget(kv.MemoryConfig{Limit: g.limit, SessionLimit: cfg.SessionLimit}); err != nil {
			g.unmap()
			return nil, err
		}
	}
	s := &Store{g: g, owner: owner, pinned: append([]string(nil), opts.PinnedPrefixes...)}
	s.ticket.Store(newTicket())
	for i := 0; i < g.shards; i++ {
		s.shards = append(s.shards, g.shard(i))
	}
	if s.slot, s.tag, err = g.attach(); err != nil {
		g.unmap()
		return nil, err
	}
	if !opts.Existing {
		s.applyConfig(cfg, budget)
	}
	s.armCheck()
	s.armRates()
	return s, nil
}

func initShards(g *segment) {
	for i := 0; i < g.shards; i++ {
		sh := g.shard(i)
		sh.initHeap()
	}
}

func (s *Store) applyConfig(cfg kv.MemoryConfig, budget int64) {
	atomic.StoreInt64(s.g.i64(hSessSetting), cfg.SessionLimit)
	atomic.StoreInt64(s.g.i64(hSessLimit), budget)
	atomic.StoreUint32(s.g.u32(hPolicy), uint32(cfg.Policy))
	comp := uint32(0)
	if cfg.Compression {
		comp = 1
	}
	atomic.StoreUint32(s.g.u32(hCompression), comp)
	atomic.StoreUint32(s.g.u32(hMinSize), uint32(cfg.CompressionMinSize))
}

// MemoryConfig returns the segment's memory setting; the zero setting once
// the store is closed.
func (s *Store) MemoryConfig() kv.MemoryConfig {
	tk, err := s.enter()
	if err != nil {
		return kv.MemoryConfig{}
	}
	defer s.leave(tk)
	return s.memoryConfig()
}

// memoryConfig is MemoryConfig for a call in progress (it holds the ticket).
func (s *Store) memoryConfig() kv.MemoryConfig {
	on, minSize := s.compression()
	return kv.MemoryConfig{
		Limit:              s.g.limit,
		SessionLimit:       atomic.LoadInt64(s.g.i64(hSessSetting)),
		Policy:             kv.Policy(atomic.LoadUint32(s.g.u32(hPolicy))),
		Compression:        on,
		CompressionMinSize: minSize,
	}
}

// compression is the compression setting for a call in progress: whether
// it is on, and its minimum size. A write reads these two words only (an
// atomic load the compiler keeps even when its result goes unused).
func (s *Store) compression() (on bool, minSize int) {
	return atomic.LoadUint32(s.g.u32(hCompression)) == 1, int(atomic.LoadUint32(s.g.u32(hMinSize)))
}

// SetMemoryConfig applies a memory setting to the whole segment, for every
// process using it: the eviction policy, compression and the session
// budget. The memory limit is fixed when the segment is created: cfg.Limit
// must be 0 or that limit.
func (s *Store) SetMemoryConfig(cfg kv.MemoryConfig) error {
	if cfg.Policy < kv.NoEviction || cfg.Policy > kv.AllKeysLRU || cfg.CompressionMinSize < 0 {
		return fmt.Errorf("%w: memory setting %+v", kv.ErrInvalidArgument, cfg)
	}
	if cfg.Limit != 0 && cfg.Limit != s.g.limit {
		return fmt.Errorf("%w: segment %s has memory_limit %d, fixed when it was created, not %d; stop the "+
			"processes using it and remove the file to resize it", kv.ErrInvalidArgument, s.g.path, s.g.limit, cfg.Limit)
	}
	budget, err := s.g.sess.Budget(kv.MemoryConfig{Limit: s.g.limit, SessionLimit: cfg.SessionLimit})
	if err != nil {
		return err
	}
	tk, err := s.enter()
	if err != nil {
		return err
	}
	defer s.leave(tk)
	s.applyConfig(cfg, budget)
	return nil
}

// Path is the segment's file.
func (s *Store) Path() string { return s.g.path }

// Name is the backend's kind, as stats report it.
func (s *Store) Name() string { return "shm" }

// Close detaches this process from the segment once calls in progress have
// returned, and unmaps it. Calls after Close fail. The segment and its
// entries stay.
func (s *Store) Close() error {
	tk := s.ticket.Swap(nil)
	if tk == nil {
		return nil
	}
	s.checkTimer.Stop()
	if t := s.rateTimer.Load(); t != nil {
		t.Stop()
	}
	done := tk.done
	tk = nil
	// The ticket is unreachable once no call holds it: every call keeps it
	// alive to its end (enter, leave), and no call can take it any more.
	// The collector finds that; its cleanup closes done.
	for pause := 50 * time.Microsecond; ; pause = min(2*pause, 100*time.Millisecond) {
		runtime.GC()
		select {
		case <-done:
			s.g.detach(s.slot)
			s.g.unmap()
			s.fenceMu.Lock()
			s.fenceTab.Load().unmap()
			s.fenceMu.Unlock()
			return nil
		case <-time.After(pause):
		}
	}
}

// A ticket stands for the mapping's use by this process's calls: each call
// takes the Store's current one and keeps it reachable until it no longer
// touches the mapping (runtime.KeepAlive in leave). Close removes it from
// the Store; the collector then tells, by running the ticket's cleanup,
// that no call holds it: no call is in progress, and none can start. This
// costs a call one plain load (no locked instruction: an atomic add on
// every call would be two of the few a call needs), and Close one or more
// collections, which is rare (a backend is chosen once per process).
type ticket struct {
	// done is closed by the cleanup once the ticket is unreachable. (A
	// pointer also keeps the ticket out of the tiny allocator, whose
	// blocks share a lifetime with their neighbours.)
	done chan struct{}
}

func newTicket() *ticket {
	tk := &ticket{done: make(chan struct{})}
	runtime.AddCleanup(tk, func(done chan struct{}) { close(done) }, tk.done)
	return tk
}

// enter begins a call: it returns the ticket the call holds until leave,
// or fails if the store is closed.
func (s *Store) enter() (*ticket, error) {
	tk := s.ticket.Load()
	if tk == nil {
		return nil, errClosed
	}
	return tk, nil
}

// leave ends the call that entered with tk: until it returns, tk is
// reachable, so Close does not unmap the segment.
func (s *Store) leave(tk *ticket) { runtime.KeepAlive(tk) }

// lockKey enters a call on key: it locates key's shard and takes its lock.
// unlockKey ends the call.
func (s *Store) lockKey(key string) (*shard, uint64, uint32, *ticket, error) {
	tk, err := s.enter()
	if err != nil {
		return nil, 0, 0, nil, err
	}
	sh, h, tag := s.locate(key)
	if err := s.lock(sh); err != nil {
		s.leave(tk)
		return nil, 0, 0, nil, err
	}
	return sh, h, tag, tk, nil
}

func (s *Store) unlockKey(sh *shard, tk *ticket) {
	s.unlock(sh)
	s.leave(tk)
}

// locate returns key's shard, its hash and its index tag.
func (s *Store) locate(key string) (*shard, uint64, uint32) {
	h := s.g.hashOf(key)
	return &s.shards[h&uint64(len(s.shards)-1)], h, tagOfHash(h)
}

// lock takes sh's lock, recovering the shard first if its owner died. It
// fails instead once the segment's file was removed, checking the file
// first when that is due (removed.go): every call that reads or writes
// entries takes a shard's lock, or reads with none (readUnlocked) only
// while no check is due.
func (s *Store) lock(sh *shard) error {
	if s.check.Load() != checkNotDue {
		if err := s.checkDue(); err != nil {
			return err
		}
	}
	// lockWord's first step here, where the compiler inlines it.
	if w := sh.u32(sLock); !atomic.CompareAndSwapUint32(w, 0, s.tag) {
		if tookOver, began := s.g.lockWordHeld(w, s.tag); tookOver {
			s.recoverShard(sh)
			s.noteDeadOwnerWait(now() - began)
		}
	}
	if sh.isBroken() {
		s.unlock(sh)
		return s.corruptError(sh.i)
	}
	return nil
}

// unlock counts the release in sh's count of them (read.go), then releases
// the lock. The count's store needs no order among the shard's others (the
// lock word covers them), only to come before the release's swap, which
// orders it.
func (s *Store) unlock(sh *shard) {
	p := sh.u64(sSeq)
	storeDerived64(p, *p+1) // only the holder writes it
	unlockWord(sh.u32(sLock))
}

// lockTwo takes the locks of a two-key operation in shard order, so that
// two such operations never deadlock; b may be a.
func (s *Store) lockTwo(a, b *shard) error {
	first, second := a, b
	if b.i < a.i {
		first, second = b, a
	}
	if err := s.lock(first); err != nil {
		return err
	}
	if second != first {
		if err := s.lock(second); err != nil {
			s.unlock(first)
			return err
		}
	}
	return nil
}

func (s *Store) unlockTwo(a, b *shard) {
	s.unlock(a)
	if b != a {
		s.unlock(b)
	}
}

// pinFlag returns flagPinned for a key never evicted: under a pinned prefix
// or the session lock prefix.
func (s *Store) pinFlag(key string) uint32 {
	if s.g.kindOf(key) == kv.KindSessionLock {
		return flagPinned
	}
	for _, p := range s.pinned {
		if strings.HasPrefix(key, p) {
			return flagPinned
		}
	}
	return 0
}

// lruClock returns the coarse clock (ms) stamped on entries, advancing the
// segment's copy when t (a clock reading, 0: none) is newer.
func (s *Store) lruClock(t int64) uint32 {
	p := s.g.u32(hLRUClock)
	c := atomic.LoadUint32(p)
	if t != 0 {
		if ms := uint32(t / int64(time.Millisecond)); ms != c {
			atomic.StoreUint32(p, ms)
			return ms
		}
	}
	return c
}

// clockAt returns *t, reading the expiry clock into it first if it is
// unread (0): an operation reads the clock at most once, and only if it
// needs it (a TTL to set or compare).
func clockAt(t *int64) int64 {
	if *t == 0 {
		*t = expiryNow()
	}
	return *t
}

// expired reports whether an entry that expires at (0: never) has expired
// at *t, reading the clock into *t if it is needed and unread.
func expired(at int64, t *int64) bool { return at != 0 && at <= clockAt(t) }

func chargeOf(size int64) int64 { return size + entryOverhead }

// account adds (sign 1) or takes away (sign -1) the live entry b's charge
// to the shard's figures: the bytes used, session data's, and those of
// b's eviction class; kind is the kind of b's key. Caller holds the lock.
func (sh *shard) account(b int64, kind kv.KeyKind, sign int64) {
	c := sign * chargeOf(sh.blockSize(b))
	p := sh.used()
	storeDerivedI64(p, atomic.LoadInt64(p)+c)
	sh.spendCredit(c)
	cl, session := sh.classOfKind(b, kind)
	if session {
		sh.addI64(sSessUsed, c)
	}
	sh.tallyClass(b, cl, c)
}

// reaccount moves the figures of old, the live entry b replaces, to b:
// what account(old, -1) and then account(b, 1) would leave, with one store
// per figure that changes and none for those that do not (a same-size
// overwrite changes none: the bytes used are words other shards' writers
// read); kind is the kind of their key. Every figure is derived, and
// recovery recounts them. Caller holds the lock.
func (sh *shard) reaccount(old, b int64, kind kv.KeyKind) {
	co, cb := chargeOf(sh.blockSize(old)), chargeOf(sh.blockSize(b))
	clo, session := sh.classOfKind(old, kind) // the same key, of kind
	clb, _ := sh.classOfKind(b, kind)
	d := cb - co
	if d != 0 {
		p := sh.used()
		storeDerivedI64(p, atomic.LoadInt64(p)+d)
		sh.spendCredit(d)
		if session {
			sh.addI64(sSessUsed, d)
		}
	}
	switch {
	case clo != clb || (sh.entryExpireAt(old) != 0) != (sh.entryExpireAt(b) != 0):
		sh.tallyClass(old, clo, -co)
		sh.tallyClass(b, clb, cb)
	case d != 0:
		sh.tallyClass(b, clb, d)
	}
}

// live returns key's slot and block if it holds an entry that has not
// expired at t (an expired one is removed). Caller holds the lock.
func (s *Store) live(sh *shard, h uint64, tag uint32, key string, t *int64) (int, int64) {
	pos, b, _ := sh.lookup(tag, key)
	if pos < 0 {
		return -1, noBlock
	}
	if s.lapsed(sh, b, t) {
		s.removeEntry(sh, pos, b, h)
		sh.count(cExpirations)
		return -1, noBlock
	}
	return pos, b
}

// lapsed reports whether the entry b has expired at *t (read into *t if
// needed) or is a session's lock whose holder's process is dead (see
// entry.go). Caller holds the lock.
func (s *Store) lapsed(sh *shard, b int64, t *int64) bool {
	if expired(sh.entryExpireAt(b), t) {
		return true
	}
	o := sh.entryHolder(b)
	return o != 0 && o != s.tag && !s.g.tagAlive(o)
}

// removeEntry removes the entry b in slot pos, whose key hashes to h, and
// wakes the oldest process waiting for that key. A SIGKILL between any two
// steps leaves either the entry (still referenced: recovery makes it live
// again) or its absence (a tombstone: recovery frees the block). Caller
// holds the lock.
func (s *Store) removeEntry(sh *shard, pos int, b int64, h uint64) {
	sh.unindex(pos, b)
	sh.release(b)
	if atomic.LoadUint32(sh.u32(sWaiters)) != 0 {
		s.wakeOne(sh, h)
	}
}

// unindex takes the live entry b out of slot pos, leaving b in flight for
// the caller to free: first b, then the tombstone (the commit), then the
// figures, the data of a session whose lock it was going back to its
// class. Caller holds the lock.
func (sh *shard) unindex(pos int, b int64) {
	sh.setState(b, stateInFlight)
	sh.removeAt(pos)
	key := sh.entryKey(b)
	kind := sh.g.kindOf(key)
	sh.account(b, kind, -1)
	sh.holdData(kind, key, 1)
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
	kind     kv.KeyKind
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
	if w.kind == kv.KindSession && w.delta > 0 {
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

// sweepSome looks at a few index slots from the shard's sweep cursor and
// removes the expired entries there. Caller holds the lock.
func (s *Store) sweepSome(sh *shard, n int, t *int64) {
	mask := s.g.indexSlots - 1
	cur := int(atomic.LoadUint32(sh.u32(sSweep)))
	for k := 0; k < n; k++ {
		i := (cur + k) & mask
		v := atomic.LoadUint64(sh.slot(i))
		if v == slotEmpty || v == slotTomb {
			continue
		}
		b := sh.blockOf(v)
		if at := sh.entryExpireAt(b); expired(at, t) {
			s.removeEntry(sh, i, b, sh.g.hashOf(sh.entryKey(b)))
			sh.count(cExpirations)
		}
	}
	storeDerived32(sh.u32(sSweep), uint32((cur+n)&mask))
}

// sweepShard removes every expired entry of the shard. Caller holds the
// lock.
func (s *Store) sweepShard(sh *shard) {
	storeDerived32(sh.u32(sSweep), 0)
	var t int64
	s.sweepSome(sh, s.g.indexSlots, &t)
}

const sweepPerWrite = 4

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
// it did. A write that does not fit makes room (makeRoom) with no lock held
// and tries again; if it cannot, it fails with kv.ErrNoMemory and nothing
// changed. ttl counts from the moment the condition is decided. A write
// conditioned on another key (a guard, a fence) is a Step (step.go), which
// holds both shards.
func (s *Store) install(key string, value []byte, ttl time.Duration, flags uint32, m mode) (installed bool, err error) {
	tk, err := s.enter()
	if err != nil {
		return false, err
	}
	defer s.leave(tk)
	on, minSize := s.compression()
	stored, cflag := storedForm(value, on, minSize)
	sh, h, tag := s.locate(key)
	// Field by field: a composite literal is built aside and copied, and
	// that copy's loads wait on its stores (a stall of ~20% of install's
	// own time in perf).
	var w write
	w.key, w.kind, w.h, w.tag, w.stored, w.flags = key, s.g.kindOf(key), h, tag, stored, flags|cflag
	// The loop of writeLoop, written out: through its closure a set took
	// ~8 ns more (Set64 94 -> 102 ns, docs/measurements.md).
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
			if w.kind == kv.KindSession && old != noBlock && !oldExpired {
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
// writeAttempts times, else the write fails with kv.ErrNoMemory and
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
			kv.ErrNoMemory, size, s.g.heapSize)
	}
	// The old entry stays until the new one is in place (put), so both
	// are in the shard's heap at once.
	if r == heapFull && w.replaces > 0 && size+w.replaces > s.g.heapSize {
		return fmt.Errorf("%w: an entry of %d bytes cannot replace the key's entry of %d bytes: a shard's heap (%d bytes) holds both while the new one is written (delete the key first, or keep such values under half of that)",
			kv.ErrNoMemory, size, w.replaces, s.g.heapSize)
	}
	return kv.ErrNoMemory
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
	if sh.entryMeta(b)&flagRead == 0 && s.g.kindOf(key) == kv.KindSession {
		sh.markRead(b) // a returning user's session
	}
	sh.countRead(cHits)
	size := sh.logicalLen(b)
	if size <= len(dst) {
		sh.readInto(b, dst[:size])
	}
	return size, true, nil
}

// Set stores value under key with a TTL (0: none), replacing any entry.
func (s *Store) Set(key string, value []byte, ttl time.Duration) error {
	if err := kv.CheckWrite(key, value, ttl); err != nil {
		return err
	}
	_, err := s.install(key, value, ttl, s.pinFlag(key), modeSet)
	return err
}

// SetNX stores value under key only if no live entry is there, with its
// TTL in the same step; the entry is a lock and is never evicted.
func (s *Store) SetNX(key string, value []byte, ttl time.Duration) (kv.SetNXOutcome, error) {
	return s.setNX(key, value, ttl)
}

func (s *Store) setNX(key string, value []byte, ttl time.Duration) (kv.SetNXOutcome, error) {
	if err := kv.CheckWrite(key, value, ttl); err != nil {
		return 0, err
	}
	ok, err := s.install(key, value, ttl, flagPinned, modeSetNX)
	switch {
	case err != nil:
		return 0, err
	case ok:
		return kv.Inserted, nil
	}
	return kv.Exists, nil
}

// Del removes key and reports whether a live entry was removed.
func (s *Store) Del(key string) (removed bool, err error) {
	sh, h, tag, tk, err := s.lockKey(key)
	if err != nil {
		return false, err
	}
	defer s.unlockKeyCatching(sh, tk, &err)
	pos, b, _ := sh.lookup(tag, key)
	if pos < 0 {
		return false, nil
	}
	var t int64
	gone := expired(sh.entryExpireAt(b), &t)
	if gone {
		sh.count(cExpirations)
	}
	s.removeEntry(sh, pos, b, h)
	return !gone, nil
}

// DelIfEq removes key only if it holds a live entry whose (decompressed)
// value equals token, in one step; an expired entry never matches.
func (s *Store) DelIfEq(key string, token []byte) (removed bool, err error) {
	sh, h, tag, tk, err := s.lockKey(key)
	if err != nil {
		return false, err
	}
	defer s.unlockKeyCatching(sh, tk, &err)
	var t int64
	pos, b := s.live(sh, h, tag, key, &t)
	if b != noBlock && sh.valueEquals(b, token) {
		s.removeEntry(sh, pos, b, h)
		sh.count(cDelIfEqMatches)
		return true, nil
	}
	sh.count(cDelIfEqMismatches)
	return false, nil
}

// Expire gives a live entry a new TTL counted from now (0: none).
func (s *Store) Expire(key string, ttl time.Duration) (bool, error) {
	return s.expireIf(key, nil, ttl)
}

// ExpireIfEq is Expire only while key holds a live entry equal to token.
func (s *Store) ExpireIfEq(key string, token []byte, ttl time.Duration) (bool, error) {
	if token == nil {
		token = []byte{}
	}
	return s.expireIf(key, token, ttl)
}

func (s *Store) expireIf(key string, token []byte, ttl time.Duration) (set bool, err error) {
	if err := kv.CheckKey(key); err != nil {
		return false, err
	}
	if err := kv.CheckTTL(ttl); err != nil {
		return false, err
	}
	sh, h, tag, tk, err := s.lockKey(key)
	if err != nil {
		return false, err
	}
	defer s.unlockKeyCatching(sh, tk, &err)
	var t int64
	_, b := s.live(sh, h, tag, key, &t)
	if b == noBlock || token != nil && !sh.valueEquals(b, token) {
		return false, nil
	}
	s.retime(sh, b, key, ttl, &t)
	return true, nil
}

// retime gives key's live entry b a TTL of ttl from *t (0: none), moving
// its charge out of its eviction class and back. Caller holds sh's lock.
func (s *Store) retime(sh *shard, b int64, key string, ttl time.Duration, t *int64) {
	at := int64(0)
	if ttl != 0 {
		at = clockAt(t) + int64(ttl)
	}
	kind := s.g.kindOf(key)
	sh.account(b, kind, -1)
	sh.setEntryExpireAt(b, at)
	sh.account(b, kind, 1)
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

// PTTL returns a live entry's remaining TTL, -1 if it has none.
func (s *Store) PTTL(key string) (ttl time.Duration, found bool, err error) {
	sh, h, tag, tk, err := s.lockKey(key)
	if err != nil {
		return 0, false, err
	}
	defer s.unlockKeyCatching(sh, tk, &err)
	var t int64
	_, b := s.live(sh, h, tag, key, &t)
	if b == noBlock {
		return 0, false, nil
	}
	at := sh.entryExpireAt(b)
	if at == 0 {
		return -1, true, nil
	}
	return time.Duration(at - t), true, nil
}

// IncrBy adds delta to the decimal integer under key and returns the sum,
// atomically; a missing key is created holding delta with ttlOnCreate, an
// existing entry keeps its TTL.
func (s *Store) IncrBy(key string, delta int64, ttlOnCreate time.Duration) (int64, error) {
	if err := kv.CheckKey(key); err != nil {
		return 0, err
	}
	if err := kv.CheckTTL(ttlOnCreate); err != nil {
		return 0, err
	}
	tk, err := s.enter()
	if err != nil {
		return 0, err
	}
	defer s.leave(tk)
	sh, h, tag := s.locate(key)
	var w write
	var result int64
	err = s.writeLoop(sh, sh, &w, func() (room, error) {
		var t int64
		room := sh.roomFor()
		pos, old := s.live(sh, h, tag, key, &t)
		var ins int
		if pos < 0 {
			_, _, ins = sh.lookup(tag, key)
		}
		w = write{key: key, kind: s.g.kindOf(key), h: h, tag: tag, flags: s.pinFlag(key)}
		result = delta
		if ttlOnCreate != 0 {
			w.expireAt = clockAt(&t) + int64(ttlOnCreate)
		}
		if old != noBlock {
			v := make([]byte, sh.logicalLen(old))
			sh.readInto(old, v)
			sum, err := kv.AddToCounter(v, delta)
			if err != nil {
				return fits, err
			}
			result = sum
			w.flags = sh.entryMeta(old) & (flagPinned | flagRead)
			w.expireAt = sh.entryExpireAt(old)
		}
		w.stored = strconv.AppendInt(nil, result, 10)
		r := s.put(sh, &w, pos, old, ins, room)
		if r == fits {
			s.sweepSome(sh, sweepPerWrite, &t)
		}
		return r, nil
	})
	if err != nil {
		return 0, err
	}
	return result, nil
}

// Flush removes every entry, one shard at a time, and wakes every waiter.
// Refused at a shard after the first, it has emptied those before: its
// error is then no kv.ErrNothingDone (backend.AfterDone).
func (s *Store) Flush() error {
	tk, err := s.enter()
	if err != nil {
		return err
	}
	defer s.leave(tk)
	for i := range s.shards {
		sh := &s.shards[i]
		if err := s.inShard(sh, func() {
			for j := 0; j < s.g.indexSlots; j++ {
				if v := atomic.LoadUint64(sh.slot(j)); v != slotEmpty && v != slotTomb {
					b := sh.blockOf(v)
					sh.unindex(j, b)
					sh.release(b)
				}
			}
			sh.compact()
			s.wakeAll(sh, 0, true)
		}); err != nil {
			if i > 0 {
				return backend.AfterDone(err)
			}
			return err
		}
	}
	return nil
}

// Stats fills kv.Stats as the in-process store does, taking each shard
// lock in turn. Attached reports the live processes attached.
func (s *Store) Stats() (kv.Stats, error) {
	tk, err := s.enter()
	if err != nil {
		return kv.Stats{}, err
	}
	defer s.leave(tk)
	cfg := s.memoryConfig()
	st := kv.Stats{InstanceID: s.g.instanceID(), MemoryLimit: cfg.Limit, SessionLimit: s.sessionLimit(),
		Eviction: cfg.Policy.String(), Compression: cfg.Compression}
	for i := range s.shards {
		sh := &s.shards[i]
		if err := s.lock(sh); err != nil {
			return kv.Stats{}, err
		}
		c := func(k int) uint64 { return atomic.LoadUint64(sh.u64(sCounters + int64(k)*8)) }
		st.Keys += int64(atomic.LoadUint32(sh.u32(sEntries)))
		st.BytesUsed += atomic.LoadInt64(sh.used())
		st.SessionBytes += atomic.LoadInt64(sh.sessUsed())
		st.Hits += c(cHits)
		st.Misses += c(cMisses)
		st.Sets += c(cSets)
		st.Evictions += c(cEvictions)
		st.Expirations += c(cExpirations)
		st.SetNXWins += c(cSetNXWins)
		st.SetNXLosses += c(cSetNXLosses)
		st.DelIfEqMatches += c(cDelIfEqMatches)
		st.DelIfEqMismatches += c(cDelIfEqMismatches)
		s.unlock(sh)
	}
	st.Processes = int64(s.g.attached())
	s.statsMore(&st)
	return st, nil
}

// Attached returns the number of live processes attached to the segment;
// 0 once the store is closed.
func (s *Store) Attached() int {
	tk, err := s.enter()
	if err != nil {
		return 0
	}
	defer s.leave(tk)
	return s.g.attached()
}

func (s *Store) noteDeadOwnerWait(d int64) {
	for {
		old := s.deadOwnerWait.Load()
		if d <= old || s.deadOwnerWait.CompareAndSwap(old, d) {
			return
		}
	}
}

// DeadOwnerWait returns the longest this process has waited for a shard
// whose owner had died, from the start of its wait until it had recovered
// the shard: the wait the recovery bound is about.
func (s *Store) DeadOwnerWait() time.Duration { return time.Duration(s.deadOwnerWait.Load()) }

// Recoveries returns how many times a shard of the segment was recovered
// from a dead owner since it was created; 0 once the store is closed.
func (s *Store) Recoveries() uint64 {
	tk, err := s.enter()
	if err != nil {
		return 0
	}
	defer s.leave(tk)
	return atomic.LoadUint64(s.g.u64(hRecoveries))
}
