package kv

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
)

// entryOverhead is what each entry is charged beyond its block (18-byte
// header, key, alignment and stored value): its table slot and allocation
// rounding.
// BenchmarkMemoryPerEntry measures the real figure.
const entryOverhead = 32

// Policy says what a write does when it does not fit under the limit.
type Policy int32

const (
	// NoEviction: the write fails with ErrNoMemory.
	NoEviction Policy = iota
	// VolatileLRU: evict the least recently used entries that have a TTL.
	VolatileLRU
	// AllKeysLRU: evict the least recently used entries, TTL or not.
	AllKeysLRU
)

var policyNames = [...]string{NoEviction: "noeviction", VolatileLRU: "volatile-lru", AllKeysLRU: "allkeys-lru"}

func (p Policy) String() string {
	if p >= 0 && int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", int32(p))
}

// ParsePolicy reads noeviction, volatile-lru or allkeys-lru.
func ParsePolicy(name string) (Policy, error) {
	for p, n := range policyNames {
		if n == name {
			return Policy(p), nil
		}
	}
	return 0, fmt.Errorf("%w: eviction policy %q is not noeviction, volatile-lru or allkeys-lru", ErrInvalidArgument, name)
}

// MemoryConfig is the store's memory setting. Locks and pinned prefixes
// are never evicted whatever the policy.
type MemoryConfig struct {
	Limit              int64 // bytes; 0 means no limit
	Policy             Policy
	Compression        bool // lz4 for values of at least CompressionMinSize bytes
	CompressionMinSize int
}

type compressionConfig struct {
	on      bool
	minSize int
}

// memory is the store-wide half of the accounting. Shards do not charge
// every write to one shared counter (an atomic read-modify-write per write,
// on a cache line every core writes): each holds a credit reserved from
// reserved in chunks, and charges its writes against that under its own
// lock. So reserved = the sum over shards of used + credit <= limit, and
// the limit is never exceeded; credit stranded in other shards can make a
// write look as if it does not fit, so the slow path (evict) first returns
// every shard's credit and checks again.
type memory struct {
	reserved atomic.Int64
	limit    atomic.Int64
	policy   atomic.Int32
	comp     atomic.Pointer[compressionConfig]
}

// creditChunk is how much a shard reserves beyond a write that its credit
// does not cover, and about what it keeps when entries are removed: at
// most 2*creditChunk per shard (2 MiB over 256 shards) is reserved but
// unused, and only until a write needs it.
const creditChunk = 4 << 10

// tightMargin: within this much of the limit, shards hold no credit at
// all (they reserve exactly what they charge and return what they free),
// so that credit never stands between a write and room that is there.
// Otherwise, with writers in other shards taking a chunk again as soon as
// a refused write had returned their credit, a write that fits could be
// refused and every write near the limit slowed down (a review measured
// 28-41 of 200 refused, and 70 s for 200 writes, with 16 writers).
const tightMargin = numShards * 2 * creditChunk

func (m *memory) compression() compressionConfig { return *m.comp.Load() }

// take reserves n more bytes if they fit under the limit.
func (m *memory) take(n int64) bool {
	for {
		reserved, limit := m.reserved.Load(), m.limit.Load()
		if limit > 0 && reserved+n > limit {
			return false
		}
		if m.reserved.CompareAndSwap(reserved, reserved+n) {
			return true
		}
	}
}

func (m *memory) fits(n int64) bool {
	limit := m.limit.Load()
	return limit == 0 || m.reserved.Load()+n <= limit
}

// tight reports whether the store is within tightMargin of its limit.
func (m *memory) tight() bool {
	limit := m.limit.Load()
	return limit > 0 && m.reserved.Load()+tightMargin > limit
}

// charge accounts delta more bytes (negative: freed) to sh's entries and
// reports whether they fit; if not, nothing changed. Caller holds sh.mu.
func (s *Store) charge(sh *shard, delta int64) bool {
	if delta > sh.credit {
		need, chunk := delta-sh.credit, int64(creditChunk)
		if s.mem.tight() {
			chunk = 0
		}
		if !s.mem.take(need + chunk) {
			if chunk == 0 || !s.mem.take(need) {
				return false
			}
			chunk = 0
		}
		sh.credit += need + chunk
	}
	sh.credit -= delta
	sh.used += delta
	if sh.credit > 0 && (delta < 0 || sh.credit > 2*creditChunk) {
		keep := int64(creditChunk)
		if s.mem.tight() {
			keep = 0 // near the limit a shard keeps nothing
		} else if sh.credit <= 2*creditChunk {
			return true // elsewhere it keeps up to two chunks
		}
		s.mem.reserved.Add(-(sh.credit - keep))
		sh.credit = keep
	}
	return true
}

// returnCredit gives sh's unused reservation back to the store. Caller
// holds sh.mu.
func (s *Store) returnCredit(sh *shard) {
	if sh.credit != 0 {
		s.mem.reserved.Add(-sh.credit)
		sh.credit = 0
	}
}

// reclaimCredit returns every shard's unused reservation, one shard lock
// at a time; the caller holds none.
func (s *Store) reclaimCredit() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		s.returnCredit(sh)
		sh.mu.Unlock()
	}
}

// Configure changes the memory setting. It applies to writes from now on:
// entries already stored stay as they are (a compressed entry stays
// readable with compression off), and a limit lowered below the memory in
// use makes later writes evict or fail, not the store shrink at once.
func (s *Store) Configure(cfg MemoryConfig) error {
	if cfg.Limit < 0 {
		return fmt.Errorf("%w: memory limit %d is negative", ErrInvalidArgument, cfg.Limit)
	}
	if cfg.Policy < NoEviction || cfg.Policy > AllKeysLRU {
		return fmt.Errorf("%w: unknown eviction policy %d", ErrInvalidArgument, cfg.Policy)
	}
	if cfg.CompressionMinSize < 0 {
		return fmt.Errorf("%w: compression minimum size %d is negative", ErrInvalidArgument, cfg.CompressionMinSize)
	}
	s.mem.limit.Store(cfg.Limit)
	s.mem.policy.Store(int32(cfg.Policy))
	s.reclaimCredit() // a lowered limit applies to the credit shards hold too
	s.mem.comp.Store(&compressionConfig{on: cfg.Compression, minSize: cfg.CompressionMinSize})
	return nil
}

// MemoryConfig returns the current memory setting.
func (s *Store) MemoryConfig() MemoryConfig {
	c := s.mem.compression()
	return MemoryConfig{
		Limit:              s.mem.limit.Load(),
		Policy:             Policy(s.mem.policy.Load()),
		Compression:        c.on,
		CompressionMinSize: c.minSize,
	}
}

const (
	evictShards   = 8  // shards sampled per eviction
	evictSamples  = 5  // candidates taken from each sampled shard
	evictScanSpan = 32 // slots scanned per sampled shard
	evictMisses   = 16 // samplings in a row that found no candidate before a full scan
)

// evict makes room for need more bytes and reports whether they fit. It
// first removes every expired entry, then evicts the least recently used
// entries the policy allows. It never evicts protect (the key being
// written: its old value must survive a write that fails), and holds one
// shard lock at a time; the caller holds none.
func (s *Store) evict(need int64, protect string) bool {
	s.reclaimCredit()
	if s.mem.fits(need) {
		return true
	}
	s.Sweep()
	s.reclaimCredit()
	policy := Policy(s.mem.policy.Load())
	if policy == NoEviction {
		return s.mem.fits(need)
	}
	for misses := 0; !s.mem.fits(need); {
		if misses < evictMisses {
			if s.evictOne(policy, protect, evictShards, evictScanSpan) {
				misses = 0
			} else {
				misses++
			}
			continue
		}
		// Candidates are rare: look at every slot of every shard.
		if !s.evictOne(policy, protect, numShards, 0) {
			return false
		}
	}
	return true
}

// evictOne looks at shards shards (numShards: all of them, in order; fewer:
// at random), takes up to evictSamples eligible entries from each within
// span slots (0: the whole table), and evicts the least recently used of
// them. It reports whether it found a candidate.
func (s *Store) evictOne(policy Policy, protect string, shards, span int) bool {
	var victim block
	var victimShard *shard
	var oldest, victimAccess uint32
	clock := s.lru.Load()
	for k := 0; k < shards; k++ {
		sh := &s.shards[k]
		if shards < numShards {
			sh = &s.shards[rand.IntN(numShards)]
		}
		sh.mu.Lock()
		if size := len(sh.t.hashes); sh.t.n > 0 {
			first, found, limit := rand.IntN(size), 0, size
			if span > 0 {
				limit = min(size, span)
			}
			for j := 0; j < limit && found < evictSamples; j++ {
				b := sh.t.blocks[(first+j)%size]
				if b == nil || !s.evictable(b, policy, protect) {
					continue
				}
				found++
				access := atomic.LoadUint32(blockAccess(b))
				if age := clock - access; victim == nil || age > oldest {
					victim, victimShard, oldest, victimAccess = b, sh, age, access
				}
			}
		}
		sh.mu.Unlock()
	}
	if victim == nil {
		return false
	}
	sh := victimShard
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// Evict it only if it is still the same entry, untouched since it was
	// sampled, and still eligible: it may have been replaced, removed or
	// read since, and a recycled block may now hold a new entry, of its key
	// or another (a lock, even); every write or read stamps the access
	// field, so an unchanged stamp means the same, still cold, entry.
	key := blockKey(victim)
	_, h := s.locate(key)
	if i := sh.t.find(h, key); i >= 0 && sh.t.blocks[i] == victim &&
		atomic.LoadUint32(blockAccess(victim)) == victimAccess && s.evictable(victim, policy, protect) {
		s.removeAt(sh, i, false)
		sh.c.evictions++
		s.returnCredit(sh) // the room made must be visible to the writer
	}
	return true
}

// evictable reports whether policy lets b go: never a pinned entry (a lock
// or a pinned prefix) nor protect; under volatile-lru only an entry with a
// TTL. Caller holds b's shard lock.
func (s *Store) evictable(b block, policy Policy, protect string) bool {
	return !blockFlags(b, flagPinned) && (policy != VolatileLRU || blockExpireAt(b) != 0) && blockKey(b) != protect
}
