package redisstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
)

var _ backend.Scanner = (*Store)(nil)

// Scan walks the server's keys (backend.Scanner): a page is one SCAN of
// about count keys, MATCH the glob of prefix (matchOf), and one pipeline
// of PTTL and STRLEN for them (a key that is no string has Size -1), so
// the keys are read each at its own instant and the server is held by no
// call longer than SCAN's own step. A key whose figures the server did
// not give (an error other than a key gone since SCAN, or a key of
// another type for STRLEN) fails the page: it is never left out as if it
// were gone. Keys are given as the store names them (a colocated key's
// hash tag taken off). ephpm's own keys (ephpm:line:, ephpm:lease:,
// ephpm:fence:) are listed as they are.
//
// Locks: Redis stores a lock as a plain string. Every walk reports as
// locks the keys under Options.LockPrefixes (the session lock prefix,
// session_lock:) and read-held names (their value is a reader record:
// Readers counts the live holds, by lock_info's script, on the server's
// clock in one step, as LockInfo counts them); a walk with locksOnly
// reports besides the names with waiters in their line (Waiters: the
// line's length, which counts waiters of every process; it counts no
// waiter of Wait), which a walk of every key does not look at (Waiters
// -1: not known). A lock taken with
// set_nx on a name nobody waits for is told from a value by nothing: it
// is in the walk of every key. HolderPID is always 0: the server records
// no process.
//
// On a Cluster the walk visits each master in turn (in the order of their
// addresses): the cursor is the master's place in that order << 56 | a
// hash of the masters' addresses << 40 | its SCAN cursor. A page whose
// cursor carries another hash than the masters' now fails with
// ErrMastersChanged: a failover (a replica, at another address, took a
// master's place), a master added or removed since the walk began would
// shift the places, and the walk would skip a master, or part of one,
// without a word. The hash has 16 bits: one change in 65536 goes unseen.
// Slots moved between the same masters (a resharding) change no address:
// a walk across one may miss the keys that moved.
func (s *Store) Scan(prefix string, cursor uint64, count int, locksOnly bool) (backend.ScanPage, error) {
	var page backend.ScanPage
	node, nodeCursor, at, nodes, set, err := s.scanNode(cursor)
	if err != nil {
		return page, err
	}
	keys, next, err := node.Scan(ctx, nodeCursor, s.matchOf(prefix), int64(max(count, 1))).Result()
	if err != nil {
		return page, classify(err)
	}
	limit := uint64(1) << 40 // a Cluster master's SCAN cursor, below the masters' hash
	if _, one := s.c.(*redis.Client); one {
		limit = 1 << 56
	}
	switch {
	case next >= limit:
		return page, fmt.Errorf("SCAN of %s answered cursor %d, beyond what a walk of %d masters can carry", s.where, next, nodes)
	case next != 0:
		page.Next = uint64(at)<<56 | set | next
	case at+1 < nodes:
		page.Next = uint64(at+1)<<56 | set
	}
	pipe := node.Pipeline()
	pttl := make([]*redis.DurationCmd, len(keys))
	strlen := make([]*redis.IntCmd, len(keys))
	head := make([]*redis.StringCmd, len(keys))
	line := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		pttl[i] = pipe.PTTL(ctx, k)
		strlen[i] = pipe.StrLen(ctx, k)
		head[i] = pipe.GetRange(ctx, k, 0, 31) // a reader record's magic, and more
		if locksOnly {
			if q, _, ok := queueKeys(k); ok {
				line[i] = pipe.ZCard(ctx, q)
			}
		}
	}
	if len(keys) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
			return page, classify(err)
		}
	}
	for i, k := range keys {
		d, err := pttl[i].Result()
		if err != nil {
			return backend.ScanPage{}, fmt.Errorf("PTTL of %s: %w", k, classify(err))
		}
		if d == -2 { // gone since SCAN saw it
			continue
		}
		ki := backend.KeyInfo{Key: s.storeKey(k), Size: -1, TTL: -1, Waiters: -1}
		if !strings.HasPrefix(ki.Key, prefix) {
			continue
		}
		if d >= 0 {
			ki.TTL = d
		}
		switch n, err := strlen[i].Result(); {
		case err == nil:
			ki.Size = n
		case !isWrongType(err):
			return backend.ScanPage{}, fmt.Errorf("STRLEN of %s: %w", k, classify(err))
		}
		h, err := head[i].Result()
		if err != nil && !isWrongType(err) {
			return backend.ScanPage{}, fmt.Errorf("GETRANGE of %s: %w", k, classify(err))
		}
		reader := err == nil && contract.IsReaderRecord([]byte(h))
		if reader {
			// lock_info's count: the live holds on the server's clock,
			// read in one step (-1: the key holds no reader record
			// any more, 0: no live hold, or the key is gone).
			n, err := s.run(lockInfoScript, []string{k})
			if err != nil {
				return backend.ScanPage{}, fmt.Errorf("the read holds of %s: %w", k, err)
			}
			ki.Readers = int(max(n, 0))
		}
		ki.Lock = reader || hasPrefix(ki.Key, s.opts.LockPrefixes)
		if locksOnly {
			if strings.HasPrefix(k, "ephpm:") {
				continue
			}
			ki.Waiters = 0
			if line[i] != nil {
				n, err := line[i].Result()
				if err != nil && !isWrongType(err) {
					return backend.ScanPage{}, fmt.Errorf("the line of %s: %w", k, classify(err))
				}
				ki.Waiters = int(n)
			}
			ki.Lock = ki.Lock || reader || ki.Waiters > 0
			if !ki.Lock {
				continue
			}
		}
		page.Keys = append(page.Keys, ki)
	}
	return page, nil
}

// ErrMastersChanged fails a page of a Cluster walk whose masters are not
// those it began with. Nothing was done: the walk starts again from
// cursor 0.
var ErrMastersChanged = fmt.Errorf("%w: the Redis Cluster's masters are not those this walk of its keys began with "+
	"(a failover, a master added or removed), or the cursor is none a walk gave: the walk would skip a master's keys; "+
	"start it again from cursor 0", contract.ErrNothingDone)

// scanNode is the server a walk's cursor is on, with that server's SCAN
// cursor, its place among the masters, how many there are and the hash
// of their addresses as the cursor carries it (bits 40-55): the one
// server of a standalone or Sentinel deployment (hash 0), or a Cluster's
// masters in turn. A Cluster cursor (but 0, where a walk begins) whose
// hash is not that of the masters now is ErrMastersChanged; one whose
// place is beyond the masters now is contract.ErrInvalidArgument, as a cursor
// no walk gave (a walk that was at the last master of a set that lost
// one is refused so too: it is not left to skip in silence either).
func (s *Store) scanNode(cursor uint64) (node *redis.Client, nodeCursor uint64, at, nodes int, set uint64, err error) {
	if c, ok := s.c.(*redis.Client); ok {
		if cursor >= 1<<56 {
			return nil, 0, 0, 0, 0, fmt.Errorf("%w: invalid cursor %d", contract.ErrInvalidArgument, cursor)
		}
		return c, cursor, 0, 1, 0, nil
	}
	cc, ok := s.c.(*redis.ClusterClient)
	if !ok {
		return nil, 0, 0, 0, 0, fmt.Errorf("a walk of the keys of a %s deployment", s.mode)
	}
	var mu sync.Mutex
	var masters []*redis.Client
	err = cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		masters = append(masters, c)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, 0, 0, 0, 0, classify(err)
	}
	slices.SortFunc(masters, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
	addrs := make([]string, len(masters))
	for i, m := range masters {
		addrs[i] = m.Options().Addr
	}
	set = mastersHash(addrs) << 40
	at = int(cursor >> 56)
	if at >= len(masters) {
		return nil, 0, 0, 0, 0, fmt.Errorf("%w: invalid cursor %d (%d masters)", contract.ErrInvalidArgument, cursor, len(masters))
	}
	if cursor != 0 && cursor&(0xffff<<40) != set {
		return nil, 0, 0, 0, 0, fmt.Errorf("%w (now %d: %s)", ErrMastersChanged, len(addrs), strings.Join(addrs, ", "))
	}
	return masters[at], cursor & (1<<40 - 1), at, len(masters), set, nil
}

// mastersHash is a 16-bit hash of a Cluster's master addresses, in order
// (FNV-1a, its 32 bits folded).
func mastersHash(addrs []string) uint64 {
	h := fnv.New32a()
	for _, a := range addrs {
		h.Write([]byte(a))
		h.Write([]byte{0})
	}
	v := h.Sum32()
	return uint64(v>>16 ^ v&0xffff)
}

// matchOf is the SCAN MATCH pattern of the Redis keys of the store keys
// that begin with prefix ("": every key): a colocated key's Redis name
// has its rest in braces (redisKey), so a prefix that reaches into that
// rest matches it after the brace. Scan checks each key it gets against
// prefix again.
func (s *Store) matchOf(prefix string) string {
	if prefix == "" {
		return ""
	}
	best := ""
	for _, c := range s.opts.Colocated {
		if strings.HasPrefix(prefix, c) && len(c) > len(best) {
			best = c
		}
	}
	if best != "" {
		return globQuote(best) + "{" + globQuote(prefix[len(best):]) + "*"
	}
	return globQuote(prefix) + "*"
}

// globQuote escapes the bytes a glob reads as special.
func globQuote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isWrongType(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") }

// storeKey is the store's name of Redis key rk: redisKey undone.
func (s *Store) storeKey(rk string) string {
	for _, prefix := range s.opts.Colocated {
		if rest, ok := strings.CutPrefix(rk, prefix+"{"); ok && strings.HasSuffix(rest, "}") {
			return prefix + rest[:len(rest)-1]
		}
	}
	return rk
}
