// IncrBy: a counter's read, sum and write in one step under the shard lock.

package shm

import (
	"strconv"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// IncrBy adds delta to the decimal integer under key and returns the sum,
// atomically; a missing key is created holding delta with ttlOnCreate, an
// existing entry keeps its TTL.
func (s *Store) IncrBy(key string, delta int64, ttlOnCreate time.Duration) (int64, error) {
	if err := contract.CheckKey(key); err != nil {
		return 0, err
	}
	if err := contract.CheckTTL(ttlOnCreate); err != nil {
		return 0, err
	}
	tk, err := s.enter()
	if err != nil {
		return 0, err
	}
	defer s.leave(tk)
	sh, h, tag := s.locate(key)
	var w write
	var result int64
	err = s.writeLoop(sh, sh, &w, func() (room, error) {
		var t int64
		room := sh.roomFor()
		pos, old := s.live(sh, h, tag, key, &t)
		var ins int
		if pos < 0 {
			_, _, ins = sh.lookup(tag, key)
		}
		w = write{key: key, kind: s.g.kindOf(key), h: h, tag: tag, flags: s.pinFlag(key)}
		result = delta
		if ttlOnCreate != 0 {
			w.expireAt = clockAt(&t) + int64(ttlOnCreate)
		}
		if old != noBlock {
			v := make([]byte, sh.logicalLen(old))
			sh.readInto(old, v)
			sum, err := contract.AddToCounter(v, delta)
			if err != nil {
				return fits, err
			}
			result = sum
			w.flags = sh.entryMeta(old) & (flagPinned | flagRead)
			w.expireAt = sh.entryExpireAt(old)
		}
		w.stored = strconv.AppendInt(nil, result, 10)
		r := s.put(sh, &w, pos, old, ins, room)
		if r == fits {
			s.sweepSome(sh, sweepPerWrite, &t)
		}
		return r, nil
	})
	if err != nil {
		return 0, err
	}
	return result, nil
}
