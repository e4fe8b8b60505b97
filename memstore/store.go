// Package memstore is ephpm's in-process key-value store: a sharded hash table
// with per-key TTLs on a monotonic clock, a memory limit with eviction, lz4
// compression, and the primitives that make locks correct: SetNX, DelIfEq,
// ExpireIfEq, Wait, and Step (a lock taken, checked or released in one
// step with a read or a write: a guarded write, a fenced one, ...).
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
package memstore

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/coarse"
)

// Options configure a Store. The zero value is the production setting
// without a memory limit.
type Options struct {
	// Now returns a monotonic time in nanoseconds from any fixed origin: the
	// clock of TTL deadlines and expiry checks: an entry is gone once it
	// reads the entry's deadline. Tests substitute a fake clock; nil means
	// CLOCK_MONOTONIC_COARSE (internal/coarse).
	Now func() int64
	// SweepInterval is how often the sweeper removes expired entries and
	// advances the LRU clock. 0 means DefaultSweepInterval; a negative
	// value disables the sweeper (expired entries are then removed only
	// lazily or by Sweep).
	SweepInterval time.Duration
	// Memory sets the initial memory limit, eviction policy and compression
	// (all can be changed later with Configure).
	Memory contract.MemoryConfig
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
	seed   hashSeed
	now    func() int64
	tick   int64 // the resolution of now (ns): 0 for a substituted clock
	origin int64
	pinned []string
	id     string
	sess   contract.SessionRule

	mem memory
	lru atomic.Uint32 // LRU clock: ms since New, advanced by the sweeper

	shards [numShards]shard

	// rates is the ring of the counters' snapshots (contract/rates.go) over
	// rateWords, ticked by the sweeper and by Stats.
	rates     contract.RateRing
	rateWords [contract.RateWords]uint64

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
	// fences holds the latest fencing token of the lock names that hash
	// here (fence.go); Flush keeps it.
	fences fences
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
	s := &Store{seed: newHashSeed(), now: opts.Now, stop: make(chan struct{}), id: uuid.NewString()}
	if s.now == nil {
		s.now, s.tick = coarse.Now, coarse.Resolution()
	}
	s.origin = s.now()
	s.rates = contract.NewRateRing(s.rateWords[:])
	s.pinned = append([]string(nil), opts.PinnedPrefixes...)
	s.sess = contract.NewSessionRule(opts.SessionDataPrefix, opts.SessionLockPrefix, opts.SessionLimitName)
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
// A session key hashes by its sid (see SessionRule).
func (s *Store) locate(key string) (*shard, uint32, contract.KeyKind) {
	kind, part := s.sess.Split(key)
	h := s.seed.hash(part)
	th := uint32(h >> 32)
	if th == 0 {
		th = 1 // 0 marks an empty slot
	}
	return &s.shards[h&(numShards-1)], th, kind
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
// expired block is removed. Caller holds sh.mu.
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
	if kind == contract.KindSession && !blockFlags(b, flagRead) {
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

// Set stores value under key, replacing any entry, with a TTL (0: none).
// The replacement is atomic: readers see the old value or the new one, never
// an absent key. It fails on an invalid argument or with ErrNoMemory, and
// then changes nothing.
func (s *Store) Set(key string, value []byte, ttl time.Duration) error {
	if err := contract.CheckWrite(key, value, ttl); err != nil {
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
func (s *Store) SetNX(key string, value []byte, ttl time.Duration) (contract.SetNXOutcome, error) {
	if err := contract.CheckWrite(key, value, ttl); err != nil {
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
		return contract.Exists, nil
	}
	return contract.Inserted, nil
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
//
// The shard lock is released explicitly, as install releases it, not by a
// defer, which costs a call on every lock release; the one thing under it
// that panics, a corrupt compressed value's decompression, releases it
// itself (valueEqualsHeld).
func (s *Store) DelIfEq(key string, token []byte) bool {
	sh, h, _ := s.locate(key)
	sh.mu.Lock()
	b, i := s.live(sh, h, key, &clock{s: s})
	match := b != nil && valueEqualsHeld(b, token, &sh.mu, nil)
	if match {
		s.removeAt(sh, i, false)
		sh.c.delIfEqMatches++
	} else {
		sh.c.delIfEqMismatches++
	}
	sh.mu.Unlock()
	return match
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
	if err := contract.CheckKey(key); err != nil {
		return false, err
	}
	if err := contract.CheckTTL(ttl); err != nil {
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
	s.retime(sh, b, kind, h, expiryAt(c.now(), ttl))
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
			sh.wakeAll(key)
		}
		sh.mu.Unlock()
	}
}

// heap items handled per shard lock hold
