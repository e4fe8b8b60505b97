package shm

import "sync/atomic"

// The memory limit is kept by reservation. Each shard holds a credit: bytes
// reserved against the limit beyond what its entries are charged, in its
// header, changed only under its lock. A write that grows what a shard is
// charged spends the shard's credit; only when the credit is short does it
// sum what every shard has reserved (charged plus credit: words other
// writers keep changing, so the sum costs a cache miss per shard) and take
// what it needs and a chunk more if the limit allows, just what it needs
// near the limit, or nothing (overLimit). What a removal or a shrinking
// write frees becomes credit, up to two chunks; the rest goes back to the
// pool (it is simply no longer reserved). A write refused for the limit
// first takes back every shard's credit (returnCredit) before it evicts.
//
// The credit is derived: recovery sets it to 0, so a reservation a dead
// process made is never lost (it was the shard's, not the process's, and is
// returned when the shard is recovered). Writers in different shards that
// sum at the same instant may together pass the limit by a chunk each; the
// heaps' headroom holds that.

// creditChunk is what a shard reserves beyond a write's need: 1/64 of its
// share of the limit, at least 4 KiB, so that the credits held (two chunks
// per shard at most) are under 1/32 of the limit.
func creditChunk(limit int64, shards int) int64 {
	return max(limit/int64(64*shards), 4<<10)
}

func (sh *shard) credit() *int64 { return sh.i64(sCredit) }

// reserve makes sure sh's credit covers delta more bytes, and reports
// whether the limit allows them. Caller holds the lock.
func (s *Store) reserve(sh *shard, delta int64) bool {
	have := atomic.LoadInt64(sh.credit())
	if have >= delta {
		return true
	}
	need, chunk := delta-have, s.g.chunk
	total := s.reserved()
	var grant int64
	switch {
	case total+need+chunk <= s.g.limit:
		grant = need + chunk
	case total+need <= s.g.limit:
		grant = need
	default:
		return false
	}
	storeDerivedI64(sh.credit(), have+grant)
	return true
}

// spendCredit charges c bytes (negative: frees them) against sh's credit:
// a charge spends it (reserve covered the write beforehand), a release adds
// to it, up to two chunks. Caller holds the lock.
func (sh *shard) spendCredit(c int64) {
	have := atomic.LoadInt64(sh.credit())
	n := have - c
	n = min(max(n, 0), 2*sh.g.chunk)
	if n != have {
		storeDerivedI64(sh.credit(), n)
	}
}

// reserved sums what every shard not broken has reserved: charged plus
// credit. A broken shard serves no write again, and its counts may be the
// damage that broke it: counted, a damaged one would refuse every write
// in the shards that serve.
func (s *Store) reserved() int64 {
	var n int64
	for i := range s.shards {
		sh := &s.shards[i]
		if sh.isBroken() {
			continue
		}
		n += atomic.LoadInt64(sh.used()) + atomic.LoadInt64(sh.credit())
	}
	return n
}

// returnCredit takes back every shard's credit, locking one at a time, and
// reports whether there was any. A shard found broken is passed by; a lock
// refused for another cause (leftOut: the segment's file found removed)
// ends it, with that error.
func (s *Store) returnCredit() (bool, error) {
	any := false
	for i := range s.shards {
		sh := &s.shards[i]
		if atomic.LoadInt64(sh.credit()) == 0 {
			continue
		}
		if err := s.inShard(sh, func() {
			if atomic.LoadInt64(sh.credit()) != 0 {
				storeDerivedI64(sh.credit(), 0)
				any = true
			}
		}); err != nil && !leftOut(err) {
			return any, err
		}
	}
	return any, nil
}
