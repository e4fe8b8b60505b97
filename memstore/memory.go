package memstore

import (
	"sync/atomic"

	"github.com/ephpm/ephpm/contract"
)

// entryOverhead is what each entry is charged beyond its block (18-byte
// header, key, alignment and stored value): its table slot and allocation
// rounding.
// BenchmarkMemoryPerEntry measures the real figure.
const entryOverhead = 32

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
// write look as if it does not fit, so the slow path (makeRoom) first returns
// every shard's credit and checks again.
//
// Session data is charged a second time, to sessions (one counter: session
// writes are a few per request, not a hot path), within sessionLimit.
type memory struct {
	reserved atomic.Int64
	limit    atomic.Int64
	policy   atomic.Int32
	comp     atomic.Pointer[compressionConfig]

	sessions       atomic.Int64 // memory charged to session data
	sessionLimit   atomic.Int64 // the budget in force; 0: none
	sessionSetting atomic.Int64 // MemoryConfig.SessionLimit as configured
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
// refused and every write near the limit slowed down (docs/measurements.md,
// "kv: credit near the limit").
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

// shortfall says which limit refused a reservation.
type shortfall int

const (
	fits         shortfall = iota
	storeFull              // the store's memory limit
	sessionsFull           // the session budget
)

// grant is room that makeRoom made and took for one writer, so that no
// other writer takes it first: bytes added to the store's reserved total
// and, for session data, to the session data charged. The writer spends
// it on its next attempt (reserve), or gives it back (giveBack).
type grant struct{ store, sessions int64 }

func (s *Store) giveBack(g *grant) {
	if g.store != 0 {
		s.mem.reserved.Add(-g.store)
	}
	if g.sessions != 0 {
		s.mem.sessions.Add(-g.sessions)
	}
	*g = grant{}
}

// reserve charges delta more bytes (negative: freed) to sh for an entry of
// kind: to the store's limit, and for session data to the session budget
// too, spending g first. It reports which limit refused; then nothing
// changed but that g is spent (its store part is now sh's credit, its
// session part given back). Caller holds sh.mu.
func (s *Store) reserve(sh *shard, kind contract.KeyKind, delta int64, g *grant) shortfall {
	if g.store != 0 {
		sh.credit += g.store // reserved already: now sh's credit
		g.store = 0
	}
	if kind != contract.KindSession {
		if !s.charge(sh, delta) {
			return storeFull
		}
		return fits
	}
	granted := g.sessions
	g.sessions = 0
	if more := delta - granted; more <= 0 {
		s.mem.sessions.Add(more) // what the grant has beyond delta
	} else if !s.mem.takeSession(more) {
		s.mem.sessions.Add(-granted)
		return sessionsFull
	}
	if !s.charge(sh, delta) {
		s.mem.sessions.Add(-delta)
		return storeFull
	}
	sh.sessionUsed += delta
	return fits
}

// releaseSession gives back the session budget a removed session data
// entry was charged (the store's limit is released by charge). Caller
// holds sh.mu.
func (s *Store) releaseSession(sh *shard, cost int64) {
	sh.sessionUsed -= cost
	s.mem.sessions.Add(-cost)
}

// takeSession adds n bytes to the session data charged if they fit in the
// budget (or are not more: a shrinking write always fits).
func (m *memory) takeSession(n int64) bool {
	for {
		used, limit := m.sessions.Load(), m.sessionLimit.Load()
		if n > 0 && limit > 0 && used+n > limit {
			return false
		}
		if m.sessions.CompareAndSwap(used, used+n) {
			return true
		}
	}
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
func (s *Store) Configure(cfg contract.MemoryConfig) error {
	if err := contract.CheckMemoryConfig(cfg); err != nil {
		return err
	}
	sessionLimit, err := s.sess.Budget(cfg)
	if err != nil {
		return err
	}
	s.mem.sessionSetting.Store(cfg.SessionLimit)
	s.mem.sessionLimit.Store(sessionLimit)
	s.mem.limit.Store(cfg.Limit)
	s.mem.policy.Store(int32(cfg.Policy))
	s.reclaimCredit() // a lowered limit applies to the credit shards hold too
	s.mem.comp.Store(&compressionConfig{on: cfg.Compression, minSize: cfg.CompressionMinSize})
	return nil
}

// MemoryConfig returns the current memory setting.
func (s *Store) MemoryConfig() contract.MemoryConfig {
	c := s.mem.compression()
	return contract.MemoryConfig{
		Limit:              s.mem.limit.Load(),
		SessionLimit:       s.mem.sessionSetting.Load(),
		Policy:             contract.Policy(s.mem.policy.Load()),
		Compression:        c.on,
		CompressionMinSize: c.minSize,
	}
}
