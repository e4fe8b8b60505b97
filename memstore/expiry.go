// Expiry: the store's clock, when an entry is expired, and the per-shard
// heap of expiry items the sweeper works from.

package memstore

import "time"

// expiryItem says that an entry whose key hashes to h was due to expire at
// at. The entry may since have been replaced, deleted or given another TTL;
// the sweeper re-checks the table before removing anything. The item holds
// the hash, not the block: a pointer would keep a replaced block (up to a
// whole value) alive until the item surfaced.
type expiryItem struct {
	at int64
	h  uint32
}

// expiryHeap is a binary min-heap on at. It is written out rather than
// built on container/heap to avoid boxing every item in an interface.
type expiryHeap []expiryItem

func (h *expiryHeap) push(it expiryItem) {
	*h = append(*h, it)
	h.up(len(*h) - 1)
}

func (h *expiryHeap) pop() expiryItem {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	if last > 0 {
		h.down(0)
	}
	return top
}

func (h expiryHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h expiryHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].at <= h[i].at {
			return
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

func (h expiryHeap) down(i int) {
	for {
		least := i
		if l := 2*i + 1; l < len(h) && h[l].at < h[least].at {
			least = l
		}
		if r := 2*i + 2; r < len(h) && h[r].at < h[least].at {
			least = r
		}
		if least == i {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
}

// clock reads the store's clock at most once, and only if asked: a clock
// read costs about as much as a whole lookup, and entries without a TTL
// never need one.
type clock struct {
	s   *Store
	t   int64
	set bool
}

func expiryAt(now int64, ttl time.Duration) int64 {
	if ttl == 0 {
		return 0
	}
	return now + int64(ttl)
}

// noteExpiry keeps the volatile count and the expiry heap in step when a
// block with expiry at (0: none), whose key hashes to h, enters (added) or
// leaves the table. Caller holds sh.mu.
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

func (c *clock) now() int64 {
	if !c.set {
		c.t, c.set = c.s.now(), true
	}
	return c.t
}

// after is the expiry of a TTL of ttl from now (0: none), reading the
// clock only for a TTL.
func (c *clock) after(ttl time.Duration) int64 {
	if ttl == 0 {
		return 0
	}
	return c.now() + int64(ttl)
}

// expired reports whether b has a TTL that has passed.
func (c *clock) expired(b block) bool {
	at := blockExpireAt(b)
	return at != 0 && at <= c.now()
}
