package redisstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/kv"
)

var _ backend.Scanner = (*Store)(nil)

// Scan walks the server's keys (backend.Scanner): a page is one SCAN of
// about count keys and one pipeline of PTTL and STRLEN for them (a key
// that is no string has Size -1), so the keys are read each at its own
// instant and the server is held by no call longer than SCAN's own step.
// A key whose figures the server did not give (an error other than a
// key gone since SCAN, or a key of another type for STRLEN) fails the
// page: it is never left out as if it were gone.
// Keys are given as the store names them (a colocated key's hash tag
// taken off). ephpm's own keys (ephpm:line:, ephpm:lease:, ephpm:fence:)
// are listed as they are.
//
// Locks: Redis stores a lock as a plain string, so a walk with locksOnly
// reports the keys it can tell are locks: those under Options.LockPrefixes
// (the session lock prefix, session_lock:), read-held names
// (their value is a reader record: Readers counts the live holds, by
// lock_info's script, on the server's clock in one step, as LockInfo
// counts them) and names with waiters in their line (Waiters: the line's
// length, which counts waiters of every process; it counts no waiter of
// Wait). A lock taken
// with set_nx on a name nobody waits for is told from a value by nothing:
// it is in the walk of every key. HolderPID is always 0: the server records
// no process. On a Cluster, Scan is refused: each master would need a
// cursor of its own.
func (s *Store) Scan(cursor uint64, count int, locksOnly bool) (backend.ScanPage, error) {
	var page backend.ScanPage
	c, ok := s.c.(*redis.Client)
	if !ok {
		return page, fmt.Errorf("%w: a walk of the keys of a %s deployment: walk each master's", kv.ErrInvalidArgument, s.mode)
	}
	keys, next, err := c.Scan(ctx, cursor, "", int64(max(count, 1))).Result()
	if err != nil {
		return page, classify(err)
	}
	page.Next = next
	pipe := c.Pipeline()
	pttl := make([]*redis.DurationCmd, len(keys))
	strlen := make([]*redis.IntCmd, len(keys))
	head := make([]*redis.StringCmd, len(keys))
	line := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		pttl[i] = pipe.PTTL(ctx, k)
		strlen[i] = pipe.StrLen(ctx, k)
		if locksOnly {
			head[i] = pipe.GetRange(ctx, k, 0, 31) // a reader record's magic, and more
			if q, _, ok := queueKeys(k); ok {
				line[i] = pipe.ZCard(ctx, q)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
		return page, classify(err)
	}
	for i, k := range keys {
		d, err := pttl[i].Result()
		if err != nil {
			return backend.ScanPage{}, fmt.Errorf("PTTL of %s: %w", k, classify(err))
		}
		if d == -2 { // gone since SCAN saw it
			continue
		}
		ki := backend.KeyInfo{Key: s.storeKey(k), Size: -1, TTL: -1}
		if d >= 0 {
			ki.TTL = d
		}
		switch n, err := strlen[i].Result(); {
		case err == nil:
			ki.Size = n
		case !isWrongType(err):
			return backend.ScanPage{}, fmt.Errorf("STRLEN of %s: %w", k, classify(err))
		}
		if locksOnly {
			if strings.HasPrefix(k, "ephpm:") {
				continue
			}
			h, err := head[i].Result()
			if err != nil && !isWrongType(err) {
				return backend.ScanPage{}, fmt.Errorf("GETRANGE of %s: %w", k, classify(err))
			}
			reader := err == nil && kv.IsReaderRecord([]byte(h))
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
			if line[i] != nil {
				n, err := line[i].Result()
				if err != nil && !isWrongType(err) {
					return backend.ScanPage{}, fmt.Errorf("the line of %s: %w", k, classify(err))
				}
				ki.Waiters = int(n)
			}
			ki.Lock = reader || ki.Waiters > 0 || hasPrefix(ki.Key, s.opts.LockPrefixes)
			if !ki.Lock {
				continue
			}
		}
		page.Keys = append(page.Keys, ki)
	}
	return page, nil
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
