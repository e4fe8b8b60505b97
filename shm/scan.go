package shm

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
)

// A walk of the entries, for tools (backend.Scanner: the ephpm command's
// keys and locks, its RESP endpoint's SCAN). It changes no entry: expired
// entries and session locks whose holder died are left out, not removed,
// and no LRU stamp or counter moves.
//
// The cursor is shard<<32 | done: done index slots of the shard have been
// visited, from the top slot down. Each page holds each shard's lock for
// at most scanSlotsPerHold slots, so a walk delays a writer on the shard
// by about as long as one write that makes room, never by a whole shard.
//
// Why downward: an entry moves between slots only when its shard's index
// is compacted (index.go), and a compaction moves an entry back along its
// probe path, always to a lower slot: it never moves one across the wrap
// (from the first slots, where a run that wraps past the last slot goes
// on, up into the last), but leaves it and the tombstone in its path
// (index.go says what that costs). A compaction cut short by a SIGKILL
// leaves an entry in two slots, and recovery keeps the one nearer its
// probe start, the lower. So an entry that has not been visited (in a
// slot below those visited) stays unvisited, and one that has may be met
// again (a
// duplicate, which a walk may return): an entry live for the whole walk
// is returned at least once, with no second look anywhere.
//
// Damage (checked.go): every offset the walk reads through is checked by
// the accessors; a shard found broken, or found corrupt by the walk (then
// marked broken, as any call that meets damage marks it), is named in the
// page's Skipped, and the walk goes on with the next shard. That is the
// one error a page goes on past: any other (the segment's file removed,
// the store closed) is the page's error, with no page, as every other
// call answers it; a walk that took it for "no more entries" would say a
// store it cannot read is empty.
const (
	scanSlotsPerHold = 4096
	scanSlotsPerPage = 16 * scanSlotsPerHold
)

// Scan returns a page of live entries whose key begins with prefix
// (backend.Scanner): about count of them (1 if count < 1), only locks
// (pinned entries: set_nx's and lock_acquire's, and session locks) with
// locksOnly, each lock with its waiters and recorded holder. A page visits
// at most scanSlotsPerPage index slots, so it may be empty with the walk
// not done.
func (s *Store) Scan(prefix string, cursor uint64, count int, locksOnly bool) (backend.ScanPage, error) {
	var page backend.ScanPage
	tk, err := s.enter()
	if err != nil {
		return page, err
	}
	defer s.leave(tk)
	n := s.g.indexSlots
	shardNo, done := int(cursor>>32), int(uint32(cursor))
	if shardNo >= len(s.shards) || done > n {
		return page, fmt.Errorf("%w: invalid cursor %d", contract.ErrInvalidArgument, cursor)
	}
	count = max(count, 1)
	budget := scanSlotsPerPage
	for shardNo < len(s.shards) {
		sh := &s.shards[shardNo]
		hold := min(scanSlotsPerHold, budget, n-done)
		var visited int
		err := s.inShard(sh, func() {
			visited = s.scanSlots(sh, prefix, done, hold, count-len(page.Keys), locksOnly, &page)
		})
		budget -= max(visited, 1)
		done += visited
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				return backend.ScanPage{}, err
			}
			page.Skipped = append(page.Skipped, err.Error())
			done = n
		}
		if done >= n {
			shardNo, done = shardNo+1, 0
		}
		if len(page.Keys) >= count || budget <= 0 {
			break
		}
	}
	if shardNo < len(s.shards) {
		page.Next = uint64(shardNo)<<32 | uint64(done)
	}
	return page, nil
}

// scanSlots visits up to hold index slots of sh from the one done slots
// below the top, down, appending the live entries it finds to page until
// it holds want more; it returns how many slots it visited. Caller holds
// sh's lock (in inShard: damage unwinds it).
func (s *Store) scanSlots(sh *shard, prefix string, done, hold, want int, locksOnly bool, page *backend.ScanPage) int {
	n := s.g.indexSlots
	t := expiryNow()
	w := waiting{s: s, sh: sh}
	found := 0
	visit := func(i int) {
		v := atomic.LoadUint64(sh.slot(i))
		if v == slotEmpty || v == slotTomb {
			return
		}
		if ki, ok := s.keyInfo(sh, sh.blockOf(v), prefix, t, locksOnly, &w); ok {
			page.Keys = append(page.Keys, ki)
			found++
		}
	}
	k := 0
	for ; k < hold && found < want; k++ {
		visit(n - 1 - (done + k))
	}
	return k
}

// keyInfo describes the entry b as of t, or reports false if it is not
// live (expired, or a session lock whose holder died) or not wanted (a
// value, with locksOnly, or a key without prefix). Caller holds sh's lock.
func (s *Store) keyInfo(sh *shard, b int64, prefix string, t int64, locksOnly bool, w *waiting) (backend.KeyInfo, bool) {
	lock := sh.entryPinned(b)
	if locksOnly && !lock || !strings.HasPrefix(sh.entryKey(b), prefix) {
		return backend.KeyInfo{}, false
	}
	at := sh.entryExpireAt(b)
	if at != 0 && at <= t {
		return backend.KeyInfo{}, false
	}
	ki := backend.KeyInfo{Key: strings.Clone(sh.entryKey(b)), Size: int64(sh.logicalLen(b)), TTL: -1, Lock: lock}
	if o := sh.entryHolder(b); o != 0 {
		if o != s.tag && !s.g.tagAlive(o) {
			return backend.KeyInfo{}, false // lapsed: its holder died (entry.go)
		}
		ki.HolderPID = int(atomic.LoadUint64(s.g.procIdent(tagSlot(o))) >> 32)
	}
	if at != 0 {
		ki.TTL = time.Duration(at - t)
	}
	if lock {
		if v := sh.valueView(b); contract.IsReaderRecord(v) {
			if mode, holders := contract.LockHolders(v, true, t); mode == contract.LockShared {
				ki.Readers = holders
			}
		}
	}
	if atomic.LoadUint32(sh.u32(sWaiters)) != 0 {
		ki.Waiters = w.of(s.g.hashOf(ki.Key))
	}
	return ki, true
}

// waiting counts the live waiters registered on a shard, by key hash,
// read from the wait table once, when a walk first asks.
type waiting struct {
	s    *Store
	sh   *shard
	read bool
	m    map[uint64]int
}

// of is the waiters of the key of hash h. Caller holds the shard's lock.
func (w *waiting) of(h uint64) int {
	if !w.read {
		w.read = true
		for i := 0; i < waitSlots; i++ {
			c := atomic.LoadUint64(w.s.g.waitCtl(i))
			if ctlState(c) != wWaiting || atomic.LoadUint32(w.s.g.waitShard(i)) != uint32(w.sh.i) {
				continue
			}
			if w.m == nil {
				w.m = map[uint64]int{}
			}
			w.m[atomic.LoadUint64(w.s.g.waitHash(i))]++
		}
	}
	return w.m[h]
}
