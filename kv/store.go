// Package kv is ephpm's in-process key-value store: a sharded hash table
// with per-key TTLs on a monotonic clock, a memory limit with eviction, lz4
// compression, and the primitives that make locks correct: SetNX, DelIfEq,
// ExpireIfEq, SetGuarded and Wait.
//
// Keys and values are binary-safe. Every operation on one key is atomic: it
// runs entirely under the lock of the key's shard, so a decision (is the key
// free? does it hold this token? has it expired?) and the change it leads to
// are one step that no other caller can interleave with.
//
// An entry whose TTL has passed is logically absent from that instant on,
// whether or not it has been removed yet. Removal happens lazily, when an
// operation meets the expired entry, and actively, by a sweeper goroutine.
// Both remove an entry only if it is still expired at the moment of removal,
// so a fresh value written in between always survives.
//
// A write that would take the store past its memory limit evicts entries if
// the policy allows, or fails with ErrNoMemory and leaves the old value in
// place; a write that eviction cannot make fit fails at once and evicts
// nothing. Locks (entries made by SetNX) and keys under a pinned prefix are
// never evicted. Session data (see Options.SessionDataPrefix) lives within
// a budget of its own and is evicted only to make room for session data.
package kv

import (
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/google/uuid"
)

// Limits on what the store accepts. They are part of the C ABI too
// (include/ephpm_kv.h repeats them for C callers).
const (
	MaxKeyLen   = 4096                      // bytes; a key is 1..MaxKeyLen bytes
	MaxValueLen = 256 << 20                 // bytes; a value is 0..MaxValueLen bytes
	MaxTTL      = (1<<31 - 1) * time.Second // longest TTL; 0 means no expiry
)

var (
	// ErrInvalidArgument is wrapped by every error that rejects an argument
	// (key length, value length, TTL range). Such a call changes nothing.
	ErrInvalidArgument = errors.New("kv: invalid argument")
	// ErrNoMemory: the write does not fit under the memory limit and the
	// eviction policy could not make room. Nothing changed.
	ErrNoMemory = errors.New("kv: out of memory")
	// ErrNotInteger: IncrBy met a value that is not a decimal int64.
	ErrNotInteger = errors.New("kv: value is not an integer")
	// ErrOverflow: IncrBy would leave the int64 range.
	ErrOverflow = errors.New("kv: increment would overflow")
)

// SetNXOutcome says what SetNX did.
type SetNXOutcome int

const (
	// Inserted: the key was absent (or expired) and now holds the value.
	Inserted SetNXOutcome = iota + 1
	// Exists: a live entry was already there; nothing changed.
	Exists
)

func (o SetNXOutcome) String() string {
	switch o {
	case Inserted:
		return "inserted"
	case Exists:
		return "exists"
	}
	return fmt.Sprintf("SetNXOutcome(%d)", int(o))
}

// Options configure a Store. The zero value is the production setting
// without a memory limit.
type Options struct {
	// Now returns a monotonic time in nanoseconds from any fixed origin.
	// Tests substitute a fake clock; nil means the process's monotonic clock.
	Now func() int64
	// SweepInterval is how often the sweeper removes expired entries and
	// advances the LRU clock. 0 means DefaultSweepInterval; a negative
	// value disables the sweeper (expired entries are then removed only
	// lazily or by Sweep).
	SweepInterval time.Duration
	// Memory sets the initial memory limit, eviction policy and compression
	// (all can be changed later with Configure).
	Memory MemoryConfig
	// PinnedPrefixes lists key prefixes whose entries are never evicted.
	PinnedPrefixes []string
	// SessionDataPrefix and SessionLockPrefix are the session rule: the data
	// of session sid is under SessionDataPrefix+sid and the lock a request
	// holds on it under SessionLockPrefix+sid. Session data is charged to
	// a budget of its own (MemoryConfig.SessionLimit) and is evicted only
	// to make room for other session data: never while its lock is there,
	// and data not read since it was written (a session nobody came back
	// to) before data that was. Keys under the lock prefix are never
	// evicted. An empty data prefix: no key is session data.
	SessionDataPrefix, SessionLockPrefix string
	// SessionLimitName is the session budget's name for the user, in the
	// message of a write the budget refuses; "" means "session_memory_limit".
	SessionLimitName string
}

// DefaultSweepInterval is the sweeper's period when Options leave it 0.
const DefaultSweepInterval = 100 * time.Millisecond

const numShards = 256 // a power of two: the shard is hash & (numShards-1)

// Store is a concurrent key-value store. All methods are safe for concurrent
// use. Create one with New; Close stops its sweeper.
type Store struct {
	seed   maphash.Seed
	now    func() int64
	origin int64
	pinned []string
	id     string
	sess   sessionRule

	mem memory
	lru atomic.Uint32 // LRU clock: ms since New, advanced by the sweeper

	shards [numShards]shard

	stop      chan struct{}
	sweeping  sync.WaitGroup
	closeOnce sync.Once
}

type shard struct {
	// mu guards the shard. A plain mutex, not an RWMutex: reads hold it for
	// a few nanoseconds, and an RWMutex costs two more atomics per write.
	mu sync.Mutex
	t  table
	// expiries holds a heap item for every block written with a TTL; items
	// of replaced or deleted blocks stay until they surface (see sweep).
	expiries expiryHeap
	volatile int // live table entries that have a TTL
	// waiters queues, per key, the callers blocked in Wait, oldest first.
	waiters map[string]*waitQueue
	// c counts what happened in this shard. Counters live per shard, not
	// per store, so that cores working on different keys never write to
	// the same cache line.
	c counters
	// used is the memory charged to this shard's entries; credit is memory
	// reserved from the store's limit but not yet charged (see charge).
	used, credit int64
	// sessionUsed is the part of used charged to session data.
	sessionUsed int64
	// evictable is the memory charged to the entries of each eviction
	// slot (see slotOf): what eviction could free, by policy and order.
	evictable [numSlots]int64
	// spare is a recyclable block taken out of the table, kept for the
	// next small write (see place). Not charged: at most recycleMax bytes.
	spare block
	_     [64]byte
}

// New returns an empty store and starts its sweeper (unless disabled).
func New(opts Options) *Store {
	s := &Store{seed: maphash.MakeSeed(), now: opts.Now, stop: make(chan struct{}), id: uuid.NewString()}
	if s.now == nil {
		origin := time.Now()
		s.now = func() int64 { return int64(time.Since(origin)) }
	}
	s.origin = s.now()
	s.pinned = append([]string(nil), opts.PinnedPrefixes...)
	s.sess = newSessionRule(opts)
	if err := s.Configure(opts.Memory); err != nil {
		panic(err)
	}
	interval := opts.SweepInterval
	if interval == 0 {
		interval = DefaultSweepInterval
	}
	if interval > 0 {
		s.sweeping.Add(1)
		go s.sweepLoop(interval)
	}
	return s
}

// Close stops the sweeper and waits for it. The store stays usable; expired
// entries are then removed only lazily. Close may be called more than once.
func (s *Store) Close() {
	s.closeOnce.Do(func() { close(s.stop) })
	s.sweeping.Wait()
}

// InstanceID is a UUID drawn when the store was made: two processes (two
// php-fpm workers) with different ids have different stores.
func (s *Store) InstanceID() string { return s.id }

// locate returns key's shard, its hash in the shard's table, and its kind.
// A session key hashes by its sid (see sessionRule).
func (s *Store) locate(key string) (*shard, uint32, keyKind) {
	kind, part := s.sess.split(key)
	h := maphash.String(s.seed, part)
	th := uint32(h >> 32)
	if th == 0 {
		th = 1 // 0 marks an empty slot
	}
	return &s.shards[h&(numShards-1)], th, kind
}

func checkKey(key string) error {
	if len(key) == 0 || len(key) > MaxKeyLen {
		return fmt.Errorf("%w: key length %d is outside 1..%d", ErrInvalidArgument, len(key), MaxKeyLen)
	}
	return nil
}

func checkTTL(ttl time.Duration) error {
	if ttl < 0 || ttl > MaxTTL {
		return fmt.Errorf("%w: ttl %v is outside 0..%v", ErrInvalidArgument, ttl, MaxTTL)
	}
	return nil
}

func checkWrite(key string, value []byte, ttl time.Duration) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if len(value) > MaxValueLen {
		return fmt.Errorf("%w: value length %d exceeds %d", ErrInvalidArgument, len(value), MaxValueLen)
	}
	return checkTTL(ttl)
}

// clock reads the store's clock at most once, and only if asked: a clock
// read costs about as much as a whole lookup, and entries without a TTL
// never need one.
type clock struct {
	s   *Store
	t   int64
	set bool
}

func (c *clock) now() int64 {
	if !c.set {
		c.t, c.set = c.s.now(), true
	}
	return c.t
}

// expired reports whether b has a TTL that has passed.
func (c *clock) expired(b block) bool {
	at := blockExpireAt(b)
	return at != 0 && at <= c.now()
}

func expiryAt(now int64, ttl time.Duration) int64 {
	if ttl == 0 {
		return 0
	}
	return now + int64(ttl)
}

func (s *Store) isPinnedKey(key string) bool {
	for _, p := range s.pinned {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// live returns key's block and slot if it is there and not expired; an
// expired block is removed. Caller holds sh.mu for writing.
func (s *Store) live(sh *shard, h uint32, key string, c *clock) (block, int) {
	i := sh.t.find(h, key)
	if i < 0 {
		return nil, -1
	}
	b := sh.t.blocks[i]
	if c.expired(b) {
		s.removeAt(sh, i, true)
		return nil, -1
	}
	return b, i
}

// GetInto copies the value of a live entry into dst if it fits, and
// returns its length either way: n > len(dst) means nothing was copied.
// A compressed value is decompressed straight into dst. A recyclable block
// is copied under the shard lock; any other after it is dropped (its value
// never changes, and a large copy should not hold the shard).
//
// A hit on session data marks it read (see Options.SessionDataPrefix).
func (s *Store) GetInto(key string, dst []byte) (n int, found bool) {
	sh, h, kind := s.locate(key)
	sh.mu.Lock()
	b, _ := s.live(sh, h, key, &clock{s: s})
	if b == nil {
		sh.c.misses++
		sh.mu.Unlock()
		return 0, false
	}
	touch(b, s.lru.Load())
	if kind == kindSession && !blockFlags(b, flagRead) {
		s.markRead(sh, b, h)
	}
	sh.c.hits++
	n = logicalLen(b)
	underLock := recyclable(b)
	if !underLock {
		sh.mu.Unlock()
	}
	if n <= len(dst) {
		readInto(b, dst[:n])
	}
	if underLock {
		sh.mu.Unlock()
	}
	return n, true
}

// Get returns a copy of the value of a live entry.
func (s *Store) Get(key string) ([]byte, bool) {
	v := make([]byte, 64)
	for {
		n, found := s.GetInto(key, v)
		if !found {
			return nil, false
		}
		if n <= len(v) {
			return v[:n], true
		}
		v = make([]byte, n) // the value may change before the retry
	}
}

// Exists reports whether key holds a live entry. It does not count as a
// hit or a miss, and does not touch the LRU.
func (s *Store) Exists(key string) bool {
	sh, h, _ := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := sh.t.get(h, key)
	return b != nil && !(&clock{s: s}).expired(b)
}

// PTTL returns the remaining TTL of a live entry (-1 if it has none).
func (s *Store) PTTL(key string) (time.Duration, bool) {
	sh, h, _ := s.locate(key)
	sh.mu.Lock()
	b := sh.t.get(h, key)
	var at int64
	if b != nil {
		at = blockExpireAt(b)
	}
	sh.mu.Unlock()
	if b == nil {
		return 0, false
	}
	if at == 0 {
		return -1, true
	}
	left := time.Duration(at - s.now())
	if left <= 0 {
		return 0, false
	}
	return left, true
}

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
	// modeGuarded: the entry that must hold guardToken.
	guardKey   string
	guardToken []byte
}

// writeMode says under which condition install stores the block.
type writeMode int

const (
	modeSet     writeMode = iota // always
	modeSetNX                    // only if key holds no live entry
	modeGuarded                  // only while guardKey holds guardToken
)

// prepare builds r's block now, with no lock held, if its value is large
// or compressed; a small plain one is written under the lock (see place).
// Callers fill their request field by field and prepare completes it in
// place: a request returned by value, or written as a composite literal,
// is built aside and copied (120 bytes in 8- and 16-byte moves), and the
// copy stalled on store forwarding, ~10 ns per write.
func (s *Store) prepare(r *writeReq) {
	if !s.buildsPlainSmall(r.key, r.value) {
		r.b = s.build(r.key, r.value, r.flags, r.at)
	}
}

// install stores r's entry if r's condition holds, and reports whether it
// did. It reserves the memory the entry needs beyond what the entry it
// replaces frees (evicting, if the policy allows, with no lock held) and
// only then swaps the blocks, so a write that does not fit changes nothing.
// For modeGuarded both shards are held, locked in address order so that two
// writers can never deadlock (a session's data and lock share one shard).
func (s *Store) install(r *writeReq) (bool, error) {
	sh, h, kind := s.locate(r.key)
	var gsh *shard
	var gh uint32
	first, second := sh, (*shard)(nil)
	if r.mode == modeGuarded {
		gsh, gh, _ = s.locate(r.guardKey)
		first, second = lockOrder(sh, gsh)
	}
	size := int64(valueOffset(len(r.key))+len(r.value)) + entryOverhead
	if r.b != nil {
		size = int64(blockSize(r.b)) + entryOverhead
	}
	var g grant
	for attempt := 0; ; attempt++ {
		first.mu.Lock()
		if second != nil {
			second.mu.Lock()
		}
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
		case modeGuarded:
			g := gsh.t.get(gh, r.guardKey)
			ok = g != nil && !c.expired(g) && valueEquals(g, r.guardToken)
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
		case kind != kindSession && g.store == 0: // the common case, inline
			if !s.charge(sh, delta) {
				short = storeFull
			}
		default:
			short = s.reserve(sh, kind, delta, &g)
		}
		reserved := ok && short == fits
		if reserved {
			at := r.at
			if r.mode != modeSet && r.ttl != 0 {
				at = c.now() + int64(r.ttl)
			}
			flags := r.flags
			if oldExpired {
				sh.c.expirations++
			} else if kind == kindSession && old != nil {
				flags |= blockMeta(old) & flagRead // the same session, rewritten
			}
			s.putEntry(sh, old, i, h, kind, r.b, r.key, r.value, flags, at)
		}
		switch {
		case r.mode == modeSetNX && !ok:
			sh.c.setNXLosses++
		case r.mode == modeSetNX && reserved:
			sh.c.setNXWins++
		case reserved:
			sh.c.sets++
		}
		if second != nil {
			second.mu.Unlock()
		}
		first.mu.Unlock()
		if !ok || reserved {
			s.giveBack(&g) // a retried condition may fail
			return ok, nil
		}
		var err error
		if g, err = s.makeRoom(need, keep{r.key, r.guardKey}, kind, short, attempt); err != nil {
			return false, err
		}
	}
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
func (s *Store) putEntry(sh *shard, old block, i int, h uint32, kind keyKind, b block, key string, value []byte, flags uint32, at int64) {
	var oldAt int64
	if old != nil {
		oldAt = blockExpireAt(old) // before place may rewrite old itself
		if kind == kindSession {
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
		if kind == kindSessionLock {
			data = s.untallyData(sh, h, key)
		}
		sh.t.add(h, b)
		if data != nil {
			s.tallySession(sh, data, h, 1) // now held
		}
	}
	sh.noteExpiry(at, h, true)
	if kind == kindSession {
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

// noteExpiry keeps the volatile count and the expiry heap in step when a
// block with expiry at (0: none), whose key hashes to h, enters (added) or
// leaves the table. Caller holds sh.mu for writing.
func (sh *shard) noteExpiry(at int64, h uint32, added bool) {
	if at == 0 {
		return
	}
	if !added {
		sh.volatile--
		// The item pushed last is usually this block's (a lock taken and
		// released, a refreshed TTL): take it back now rather than leave a
		// stale item for the sweeper or a compaction.
		if n := len(sh.expiries) - 1; n >= 0 && sh.expiries[n] == (expiryItem{at: at, h: h}) {
			sh.expiries = sh.expiries[:n]
		}
		return
	}
	sh.volatile++
	sh.expiries.push(expiryItem{at: at, h: h})
	sh.compactExpiries()
}

// removeAt deletes the entry in slot i and wakes the oldest caller waiting
// for its key. Caller holds sh.mu for writing.
func (s *Store) removeAt(sh *shard, i int, expired bool) {
	b, h := sh.t.blocks[i], sh.t.hashes[i]
	kind := s.sess.kindOf(blockKey(b))
	if kind == kindSession {
		s.tallySession(sh, b, h, -1)
	} else {
		sh.tallyPlain(b, -1)
	}
	var data block
	if kind == kindSessionLock {
		data = s.untallyData(sh, h, blockKey(b))
	}
	sh.t.removeAt(i)
	if data != nil {
		s.tallySession(sh, data, h, 1) // no longer held
	}
	sh.noteExpiry(blockExpireAt(b), h, false)
	s.charge(sh, -blockCost(b))
	if kind == kindSession {
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
	if len(s.pinned) == 0 && !s.sess.first[key[0]] {
		return 0
	}
	return s.pinFlagOf(key)
}

func (s *Store) pinFlagOf(key string) uint32 {
	if s.isPinnedKey(key) || s.sess.kindOf(key) == kindSessionLock {
		return flagPinned
	}
	return 0
}

// Set stores value under key, replacing any entry, with a TTL (0: none).
// The replacement is atomic: readers see the old value or the new one, never
// an absent key. It fails on an invalid argument or with ErrNoMemory, and
// then changes nothing.
func (s *Store) Set(key string, value []byte, ttl time.Duration) error {
	if err := checkWrite(key, value, ttl); err != nil {
		return err
	}
	var at int64
	if ttl != 0 {
		at = s.now() + int64(ttl)
	}
	var r writeReq
	r.key, r.value, r.flags, r.mode, r.at = key, value, s.pinFlag(key), modeSet, at
	s.prepare(&r)
	_, err := s.install(&r)
	return err
}

// SetNX stores value under key only if no live entry is there, and applies
// the TTL (0: none) in the same step. Among any number of concurrent callers
// on a free key exactly one gets Inserted. An expired entry counts as absent
// and is replaced. The entry is a lock: it is never evicted. On an error
// nothing changed.
func (s *Store) SetNX(key string, value []byte, ttl time.Duration) (SetNXOutcome, error) {
	if err := checkWrite(key, value, ttl); err != nil {
		return 0, err
	}
	var r writeReq
	r.key, r.value, r.flags, r.mode, r.ttl = key, value, flagPinned, modeSetNX, ttl
	s.prepare(&r)
	ok, err := s.install(&r)
	if err != nil {
		return 0, err
	}
	if !ok {
		return Exists, nil
	}
	return Inserted, nil
}

// SetGuarded stores value under key, with a TTL as Set does, only while
// guardKey holds a live entry equal to guardToken, and reports whether it
// did. The check and the write are one atomic step (both shards are held),
// so a writer whose lock expired and was taken by another cannot overwrite
// what the new holder protects. On an error (invalid argument, ErrNoMemory)
// nothing changed.
func (s *Store) SetGuarded(key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	if err := checkWrite(key, value, ttl); err != nil {
		return false, err
	}
	if err := checkKey(guardKey); err != nil {
		return false, err
	}
	var r writeReq
	r.key, r.value, r.flags, r.mode, r.ttl = key, value, s.pinFlag(key), modeGuarded, ttl
	r.guardKey, r.guardToken = guardKey, guardToken
	s.prepare(&r)
	return s.install(&r)
}

// DelGuarded removes key only while guardKey holds a live entry equal to
// guardToken, and reports whether the guard held (key is then absent,
// whether or not it held an entry). The check and the removal are one
// atomic step (both shards are held), so a request whose lock expired and
// was taken by another cannot delete what the new holder protects. It fails
// only on an invalid argument, and then changes nothing.
func (s *Store) DelGuarded(key, guardKey string, guardToken []byte) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	if err := checkKey(guardKey); err != nil {
		return false, err
	}
	sh, h, _ := s.locate(key)
	gsh, gh, _ := s.locate(guardKey)
	first, second := lockOrder(sh, gsh)
	first.mu.Lock()
	if second != nil {
		second.mu.Lock()
		defer second.mu.Unlock()
	}
	defer first.mu.Unlock()
	c := clock{s: s}
	if g, _ := s.live(gsh, gh, guardKey, &c); g == nil || !valueEquals(g, guardToken) {
		return false, nil
	}
	if i := sh.t.find(h, key); i >= 0 {
		s.removeAt(sh, i, c.expired(sh.t.blocks[i]))
	}
	return true, nil
}

// Del removes key and reports whether a live entry was removed. An expired
// entry is removed too but reported as absent.
func (s *Store) Del(key string) bool {
	sh, h, _ := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	i := sh.t.find(h, key)
	if i < 0 {
		return false
	}
	c := clock{s: s}
	expired := c.expired(sh.t.blocks[i])
	s.removeAt(sh, i, expired)
	return !expired
}

// DelIfEq removes key only if it holds a live entry whose value equals token
// byte for byte, and reports whether it did. The compare (against the
// decompressed value) and the delete are one step under the shard lock; an
// expired entry never matches.
func (s *Store) DelIfEq(key string, token []byte) bool {
	sh, h, _ := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b, i := s.live(sh, h, key, &clock{s: s})
	if b == nil || !valueEquals(b, token) {
		sh.c.delIfEqMismatches++
		return false
	}
	s.removeAt(sh, i, false)
	sh.c.delIfEqMatches++
	return true
}

// Expire gives a live entry a new TTL counted from now (0: no expiry)
// without touching its value, and reports whether there was one.
func (s *Store) Expire(key string, ttl time.Duration) (bool, error) {
	return s.expireIf(key, nil, ttl)
}

// ExpireIfEq is Expire only while key holds a live entry equal to token:
// the token-guarded refresh of a lock, for long work under it.
func (s *Store) ExpireIfEq(key string, token []byte, ttl time.Duration) (bool, error) {
	if token == nil {
		token = []byte{}
	}
	return s.expireIf(key, token, ttl)
}

func (s *Store) expireIf(key string, token []byte, ttl time.Duration) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	sh, h, kind := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	c := clock{s: s}
	b, _ := s.live(sh, h, key, &c)
	if b == nil || (token != nil && !valueEquals(b, token)) {
		return false, nil
	}
	s.tally(sh, b, kind, h, -1)
	sh.noteExpiry(blockExpireAt(b), h, false)
	setBlockExpireAt(b, expiryAt(c.now(), ttl))
	sh.noteExpiry(blockExpireAt(b), h, true)
	s.tally(sh, b, kind, h, 1)
	return true, nil
}

// Len returns the number of stored entries, including expired ones that
// have not been removed yet.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.t.n
		sh.mu.Unlock()
	}
	return n
}

// Flush removes every entry. Callers waiting on a key are woken.
func (s *Store) Flush() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		s.mem.sessions.Add(-sh.sessionUsed)
		sh.sessionUsed = 0
		s.charge(sh, -sh.used)
		s.returnCredit(sh)
		sh.t.reset()
		sh.expiries = nil
		sh.volatile = 0
		sh.evictable = [numSlots]int64{}
		for key := range sh.waiters {
			for sh.waiters[key] != nil {
				sh.wakeOne(key)
			}
		}
		sh.mu.Unlock()
	}
}

// compactExpiries rebuilds the heap from the table once stale items (of
// replaced or deleted blocks) outnumber live ones, which bounds the heap at
// about twice the number of entries with a TTL, plus a quarter of the
// table's slots: the rebuild scans every slot, and that slack keeps its cost
// per pushed item constant however many entries have no TTL.
func (sh *shard) compactExpiries() {
	if len(sh.expiries) <= 2*sh.volatile+len(sh.t.hashes)/4+64 {
		return
	}
	sh.expiries = sh.expiries[:0]
	for i, b := range sh.t.blocks {
		if b != nil && blockExpireAt(b) != 0 {
			sh.expiries = append(sh.expiries, expiryItem{at: blockExpireAt(b), h: sh.t.hashes[i]})
		}
	}
	sh.expiries.init()
}

const sweepBatch = 128 // heap items handled per shard lock hold

// Sweep removes every entry that is expired now and returns how many it
// removed. The sweeper calls it periodically; tests call it directly.
func (s *Store) Sweep() int {
	removed := 0
	for i := range s.shards {
		removed += s.sweepShard(&s.shards[i])
	}
	return removed
}

func (s *Store) sweepShard(sh *shard) int {
	removed := 0
	for {
		sh.mu.Lock()
		now := s.now()
		n := 0
		for ; n < sweepBatch && len(sh.expiries) > 0 && sh.expiries[0].at <= now; n++ {
			// The item may be stale: remove only entries with its hash
			// that are expired now.
			removed += s.removeExpired(sh, sh.expiries.pop().h, now)
		}
		sh.mu.Unlock()
		if n < sweepBatch {
			return removed
		}
	}
}

// removeExpired removes the entries whose key hashes to h and that are
// expired at now. Caller holds sh.mu for writing.
func (s *Store) removeExpired(sh *shard, h uint32, now int64) int {
	removed := 0
	for i := sh.t.nextWithHash(h, -1); i >= 0; i = sh.t.nextWithHash(h, i) {
		if blockExpired(sh.t.blocks[i], now) {
			s.removeAt(sh, i, true)
			removed++
			// The removal shifted the run back, and may have shrunk the
			// table, which moves every slot: scan the run again.
			i = -1
		}
	}
	return removed
}

func (s *Store) sweepLoop(interval time.Duration) {
	defer s.sweeping.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.lru.Store(uint32((s.now() - s.origin) / int64(time.Millisecond)))
			s.Sweep()
		}
	}
}
