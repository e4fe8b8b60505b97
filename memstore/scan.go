package memstore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// ScanEntry is one live entry as Scan saw it, under its shard's lock.
type ScanEntry struct {
	Key  string
	Size int64         // the value's length (decompressed)
	TTL  time.Duration // time left; -1 for none
	// Lock: the entry is never evicted: a lock (SetNX, LockAttempt, a
	// session's lock) or a key under a pinned prefix.
	Lock bool
	// Readers is the live read holds of a read-held lock, else 0.
	Readers int
	// Waiters is how many callers Wait for the key in this process.
	Waiters int
}

// A walk of the entries, for tools (backend.Scanner over the in-process
// store). The cursor is shard<<32 | from: the walk visits the shards in
// turn, and each shard's entries in the order of their 32-bit table hash,
// the next page of a shard beginning with the entries whose hash is at
// least from. A hash never changes while its key is in the store, whatever
// the table does (a resize rehashes, a removal shifts entries back), so an
// entry live for the whole walk is met when the walk passes its hash, once:
// every entry of one hash goes into one page. A page costs a pass over
// each shard it visits (at most scanSlotsPerPage slots of them) under that
// shard's lock.
const scanSlotsPerPage = 1 << 16

// Scan returns a page of the live entries whose key begins with prefix
// (only locks with locksOnly): about count of them (at least 1; more when
// several share the last one's hash), and the cursor of the next page, 0
// once the walk is done. A page may hold fewer with the walk not done. A
// cursor no walk gives is refused with ErrInvalidArgument. It changes
// nothing: an expired entry is left for the sweeper, no LRU stamp moves.
func (s *Store) Scan(prefix string, cursor uint64, count int, locksOnly bool) ([]ScanEntry, uint64, error) {
	shardNo, from := cursor>>32, uint32(cursor)
	if shardNo >= numShards {
		return nil, 0, fmt.Errorf("%w: invalid cursor %d", contract.ErrInvalidArgument, cursor)
	}
	count = max(count, 1)
	var page []ScanEntry
	budget := scanSlotsPerPage
	type cand struct {
		h uint32
		b block
	}
	var cands []cand
	for shardNo < numShards && len(page) < count && budget > 0 {
		sh := &s.shards[shardNo]
		sh.mu.Lock()
		c := clock{s: s}
		cands = cands[:0]
		for i, h := range sh.t.hashes {
			if h < from || h == 0 {
				continue
			}
			b := sh.t.blocks[i]
			if c.expired(b) || !strings.HasPrefix(blockKey(b), prefix) || locksOnly && !blockFlags(b, flagPinned) {
				continue
			}
			cands = append(cands, cand{h, b})
		}
		budget -= max(len(sh.t.hashes), 1)
		slices.SortFunc(cands, func(a, b cand) int {
			switch {
			case a.h < b.h:
				return -1
			case a.h > b.h:
				return 1
			}
			return 0
		})
		want := count - len(page)
		n := len(cands)
		if n > want {
			n = want
			for n < len(cands) && cands[n].h == cands[n-1].h {
				n++ // every entry of one hash in one page
			}
		}
		for _, cd := range cands[:n] {
			page = append(page, s.scanEntry(sh, cd.b, &c))
		}
		sh.mu.Unlock()
		if n < len(cands) && cands[n-1].h != ^uint32(0) {
			from = cands[n-1].h + 1
			break
		}
		shardNo, from = shardNo+1, 0
	}
	if shardNo >= numShards {
		return page, 0, nil
	}
	return page, shardNo<<32 | uint64(from), nil
}

// scanEntry describes b. Caller holds sh.mu.
func (s *Store) scanEntry(sh *shard, b block, c *clock) ScanEntry {
	key := blockKey(b)
	e := ScanEntry{Key: strings.Clone(key), Size: int64(logicalLen(b)), TTL: -1, Lock: blockFlags(b, flagPinned)}
	if at := blockExpireAt(b); at != 0 {
		e.TTL = time.Duration(at - c.now())
	}
	if e.Lock {
		if v := logicalValue(b); contract.IsReaderRecord(v) {
			if mode, holders := contract.LockHolders(v, true, c.now()); mode == contract.LockShared {
				e.Readers = holders
			}
		}
	}
	if q := sh.waiters[key]; q != nil {
		e.Waiters = len(q.list)
	}
	return e
}
