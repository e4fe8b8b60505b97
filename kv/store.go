// Package kv is ephpm's in-process key-value store: a sharded map with
// per-key TTLs on a monotonic clock and the two primitives that make locks
// correct, SetNX and DelIfEq.
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
package kv

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Limits on what the store accepts. They are part of the C ABI too
// (include/ephpm_kv.h repeats them for C callers).
const (
	MaxKeyLen   = 4096                      // bytes; a key is 1..MaxKeyLen bytes
	MaxValueLen = 256 << 20                 // bytes; a value is 0..MaxValueLen bytes
	MaxTTL      = (1<<31 - 1) * time.Second // longest TTL; 0 means no expiry
)

// ErrInvalidArgument is wrapped by every error that rejects an argument (key
// length, value length, TTL range). Such a call changes nothing.
var ErrInvalidArgument = errors.New("kv: invalid argument")

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

// Options configure a Store. The zero value is the production setting.
type Options struct {
	// Now returns a monotonic time in nanoseconds from any fixed origin.
	// Tests substitute a fake clock; nil means the process's monotonic clock.
	Now func() int64
	// SweepInterval is how often the sweeper removes expired entries.
	// 0 means DefaultSweepInterval; a negative value disables the sweeper
	// (expired entries are then removed only lazily or by Sweep).
	SweepInterval time.Duration
}

// DefaultSweepInterval is the sweeper's period when Options leave it 0.
const DefaultSweepInterval = 100 * time.Millisecond

const numShards = 256 // a power of two: the shard is hash & (numShards-1)

// Store is a concurrent key-value store. All methods are safe for concurrent
// use. Create one with New; Close stops its sweeper.
type Store struct {
	seed   maphash.Seed
	now    func() int64
	shards [numShards]shard

	stop      chan struct{}
	sweeping  sync.WaitGroup
	closeOnce sync.Once
}

type shard struct {
	mu sync.RWMutex
	m  map[string]entry
	// expiries holds a heap item for every entry written with a TTL; items
	// of overwritten or deleted entries stay until they surface (see sweep).
	expiries expiryHeap
	volatile int // live map entries that have a TTL
	// waiters queues, per key, the callers blocked in Wait, oldest first.
	waiters map[string]*waitQueue
	_       [64]byte
}

// entry is stored by value. Its value slice is never modified after the
// entry is stored, so readers may use it after dropping the shard lock.
type entry struct {
	value    []byte
	expireAt int64 // monotonic ns; 0 means no expiry
}

func (e entry) expiredAt(now int64) bool { return e.expireAt != 0 && e.expireAt <= now }

// New returns an empty store and starts its sweeper (unless disabled).
func New(opts Options) *Store {
	s := &Store{seed: maphash.MakeSeed(), now: opts.Now, stop: make(chan struct{})}
	if s.now == nil {
		origin := time.Now()
		s.now = func() int64 { return int64(time.Since(origin)) }
	}
	for i := range s.shards {
		s.shards[i].m = make(map[string]entry)
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

func (s *Store) shardIndex(key string) uint64 {
	return maphash.String(s.seed, key) & (numShards - 1)
}

func (s *Store) shard(key string) *shard { return &s.shards[s.shardIndex(key)] }

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

// ownedCopy copies key and value into one allocation the store owns. The
// caller's key may point into memory the store must not keep (C buffers).
func ownedCopy(key string, value []byte) (string, []byte) {
	buf := make([]byte, len(key)+len(value))
	copy(buf, key)
	copy(buf[len(key):], value)
	return unsafe.String(&buf[0], len(key)), buf[len(key):len(buf):len(buf)]
}

func (s *Store) expiry(ttl time.Duration) int64 {
	if ttl == 0 {
		return 0
	}
	return s.now() + int64(ttl)
}

// Get returns the value of a live entry. The returned slice is the store's
// own, shared with other readers: it never changes, and the caller must not
// modify it. An expired entry is reported absent and removed.
func (s *Store) Get(key string) ([]byte, bool) {
	sh := s.shard(key)
	sh.mu.RLock()
	e, ok := sh.m[key]
	sh.mu.RUnlock()
	if !ok {
		return nil, false
	}
	if e.expireAt != 0 {
		if now := s.now(); e.expiredAt(now) {
			sh.mu.Lock()
			sh.removeIfExpired(key, now)
			sh.mu.Unlock()
			return nil, false
		}
	}
	return e.value, true
}

// Set stores value under key, replacing any entry, with a TTL (0: none).
// The replacement is atomic: readers see the old value or the new one, never
// an absent key. It fails only on an invalid argument, changing nothing.
func (s *Store) Set(key string, value []byte, ttl time.Duration) error {
	if err := checkWrite(key, value, ttl); err != nil {
		return err
	}
	k, v := ownedCopy(key, value)
	exp := s.expiry(ttl)
	sh := s.shard(key)
	sh.mu.Lock()
	sh.put(k, entry{value: v, expireAt: exp})
	sh.mu.Unlock()
	return nil
}

// SetNX stores value under key only if no live entry is there, and applies
// the TTL (0: none) in the same step. Among any number of concurrent callers
// on a free key exactly one gets Inserted. An expired entry counts as absent
// and is replaced. On an invalid argument it returns an error and changes
// nothing.
func (s *Store) SetNX(key string, value []byte, ttl time.Duration) (SetNXOutcome, error) {
	if err := checkWrite(key, value, ttl); err != nil {
		return 0, err
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	if e, ok := sh.m[key]; ok && !e.expiredAt(now) {
		return Exists, nil
	}
	sh.putCopy(key, value, ttl, now)
	return Inserted, nil
}

// Del removes key and reports whether a live entry was removed. An expired
// entry is removed too but reported as absent.
func (s *Store) Del(key string) bool {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.m[key]
	if !ok {
		return false
	}
	sh.remove(key, e)
	return e.expireAt == 0 || !e.expiredAt(s.now())
}

// DelIfEq removes key only if it holds a live entry whose value equals token
// byte for byte, and reports whether it did. The compare and the delete are
// one step under the shard lock; an expired entry never matches.
func (s *Store) DelIfEq(key string, token []byte) bool {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.m[key]
	if !ok || !bytes.Equal(e.value, token) {
		return false
	}
	if e.expireAt != 0 && e.expiredAt(s.now()) {
		return false
	}
	sh.remove(key, e)
	return true
}

// SetGuarded stores value under key, with a TTL as Set does, only while
// guardKey holds a live entry equal to guardToken, and reports whether it
// did. The check and the write are one atomic step (both shards are locked,
// in index order), so a writer whose lock expired and was taken by another
// cannot overwrite what the new holder protects. It fails only on an
// invalid argument, changing nothing.
func (s *Store) SetGuarded(key string, value []byte, ttl time.Duration, guardKey string, guardToken []byte) (bool, error) {
	if err := checkWrite(key, value, ttl); err != nil {
		return false, err
	}
	if err := checkKey(guardKey); err != nil {
		return false, err
	}
	ki, gi := s.shardIndex(key), s.shardIndex(guardKey)
	sh, gsh := &s.shards[ki], &s.shards[gi]
	first, second := sh, gsh
	if gi < ki {
		first, second = gsh, sh
	}
	first.mu.Lock()
	defer first.mu.Unlock()
	if second != first {
		second.mu.Lock()
		defer second.mu.Unlock()
	}
	now := s.now()
	if g, ok := gsh.m[guardKey]; !ok || g.expiredAt(now) || !bytes.Equal(g.value, guardToken) {
		return false, nil
	}
	sh.putCopy(key, value, ttl, now)
	return true, nil
}

// Expire gives a live entry a new TTL counted from now (0: no expiry)
// without touching its value, and reports whether there was one.
func (s *Store) Expire(key string, ttl time.Duration) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	e, ok := sh.m[key]
	if !ok || e.expiredAt(now) {
		return false, nil
	}
	e.expireAt = 0
	if ttl != 0 {
		e.expireAt = now + int64(ttl)
	}
	sh.put(strings.Clone(key), e) // the map must keep an owned key
	return true, nil
}

// Len returns the number of stored entries, including expired ones that
// have not been removed yet.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}

// put stores e under k. Caller holds sh.mu for writing.
func (sh *shard) put(k string, e entry) {
	if old, ok := sh.m[k]; ok && old.expireAt != 0 {
		sh.volatile--
	}
	sh.m[k] = e
	if e.expireAt != 0 {
		sh.volatile++
		sh.expiries.push(expiryItem{at: e.expireAt, key: k})
		sh.compactExpiries()
	}
}

// putCopy stores a copy of key and value with ttl (0: none) counted from
// now. Caller holds sh.mu for writing.
func (sh *shard) putCopy(key string, value []byte, ttl time.Duration, now int64) {
	k, v := ownedCopy(key, value)
	exp := int64(0)
	if ttl != 0 {
		exp = now + int64(ttl)
	}
	sh.put(k, entry{value: v, expireAt: exp})
}

// remove deletes the entry e found under key and wakes the oldest caller
// waiting for key to be free. Caller holds sh.mu for writing.
func (sh *shard) remove(key string, e entry) {
	delete(sh.m, key)
	if e.expireAt != 0 {
		sh.volatile--
	}
	if len(sh.waiters) != 0 {
		sh.wakeOne(key)
	}
}

// removeIfExpired deletes key if its entry is expired at now, re-checked
// under the write lock. Caller holds sh.mu for writing.
func (sh *shard) removeIfExpired(key string, now int64) bool {
	e, ok := sh.m[key]
	if !ok || !e.expiredAt(now) {
		return false
	}
	sh.remove(key, e)
	return true
}

// compactExpiries rebuilds the heap from the map once stale items (of
// overwritten or deleted entries) outnumber live ones, which bounds the
// heap at about twice the number of entries with a TTL.
func (sh *shard) compactExpiries() {
	if len(sh.expiries) <= 2*sh.volatile+64 {
		return
	}
	sh.expiries = sh.expiries[:0]
	for k, e := range sh.m {
		if e.expireAt != 0 {
			sh.expiries = append(sh.expiries, expiryItem{at: e.expireAt, key: k})
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
		removed += s.shards[i].sweep(s.now)
	}
	return removed
}

func (sh *shard) sweep(now func() int64) int {
	removed := 0
	for {
		sh.mu.Lock()
		t := now()
		n := 0
		for ; n < sweepBatch && len(sh.expiries) > 0 && sh.expiries[0].at <= t; n++ {
			item := sh.expiries.pop()
			if sh.removeIfExpired(item.key, t) {
				removed++
			}
		}
		sh.mu.Unlock()
		if n < sweepBatch {
			return removed
		}
	}
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
			s.Sweep()
		}
	}
}
