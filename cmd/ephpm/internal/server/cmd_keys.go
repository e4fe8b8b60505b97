// The commands on keys whatever their value: DEL, EXISTS, EXPIRE,
// PEXPIRE, TTL, PTTL.

package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// del is DEL key [key ...]. A store error is one of a shard or of the
// whole segment, which every key of it meets alike (a damaged shard, a
// removed file): with more than one key, each is looked at first, and a
// key that fails there fails the command with nothing deleted. An error
// only the deletion meets (damage found in the step itself) ends the
// command there, its keys before it deleted, as each key is deleted on
// its own step: the error says which were.
func (c *conn) del(keys [][]byte) {
	st := c.s.cfg.Store
	if len(keys) > 1 {
		for _, k := range keys {
			if _, err := st.Exists(string(k)); err != nil {
				c.storeErr(fmt.Errorf("DEL deleted nothing: key '%s': %w", cleanArg(k), err))
				return
			}
		}
	}
	var deleted []string
	for i, k := range keys {
		ok, err := st.Del(string(k))
		if err != nil {
			if i > 0 {
				err = fmt.Errorf("DEL failed at key '%s' having deleted %d of the %d keys before it (%s): %w",
					cleanArg(k), len(deleted), i, keyList(deleted), err)
			}
			c.storeErr(err)
			return
		}
		if ok {
			deleted = append(deleted, string(k))
		}
	}
	c.w.Int(int64(len(deleted)))
}

// exists is EXISTS key [key ...]: how many of the keys have an entry, a
// key named twice counted twice, as in Redis.
func (c *conn) exists(keys [][]byte) {
	var count int64
	for _, k := range keys {
		ok, err := c.s.cfg.Store.Exists(string(k))
		if c.storeErr(err) {
			return
		}
		count += boolInt(ok)
	}
	c.w.Int(count)
}

// expire is EXPIRE and PEXPIRE: a time that is not positive deletes the
// key, as in Redis.
func (c *conn) expire(name []byte, args [][]byte) {
	if len(args) > 3 {
		c.w.Error("ERR Unsupported option " + cleanArg(args[3]))
		return
	}
	unit := time.Second
	if string(name) == "pexpire" {
		unit = time.Millisecond
	}
	st := c.s.cfg.Store
	key := string(args[1])
	if n, err := strconv.ParseInt(string(args[2]), 10, 64); err == nil && n <= 0 {
		ok, err := st.Del(key)
		if c.storeErr(err) {
			return
		}
		c.w.Int(boolInt(ok))
		return
	}
	ttl, ok := c.parseTTL(args[2], unit, string(name))
	if !ok {
		return
	}
	set, err := st.Expire(key, ttl)
	if c.storeErr(err) {
		return
	}
	c.w.Int(boolInt(set))
}

// ttl is TTL and PTTL: the time key has left, -2 without an entry, -1
// without expiry. The time left is cut to the unit, never rounded up
// (Redis's TTL rounds to the nearest second): a lock never looks
// longer-lived than it is, as the ephpm command shows it.
func (c *conn) ttl(name []byte, key string) {
	ttl, found, err := c.s.cfg.Store.PTTL(key)
	switch {
	case c.storeErr(err):
	case !found:
		c.w.Int(-2)
	case ttl < 0:
		c.w.Int(-1)
	case string(name) == "ttl":
		c.w.Int(int64(ttl / time.Second))
	default:
		c.w.Int(ttl.Milliseconds())
	}
}

// parseTTL reads a count of unit (time.Second, time.Millisecond) for the
// command called name: Redis's errors for a word and for a time that is
// not positive or too large.
func (c *conn) parseTTL(arg []byte, unit time.Duration, name string) (time.Duration, bool) {
	n, err := strconv.ParseInt(string(arg), 10, 64)
	if err != nil {
		c.w.Error(errNotInteger)
		return 0, false
	}
	if n <= 0 || n > math.MaxInt64/int64(unit) || contract.CheckTTL(time.Duration(n)*unit) != nil {
		c.w.Error("ERR invalid expire time in '" + name + "' command")
		return 0, false
	}
	return time.Duration(n) * unit, true
}

// keyList quotes keys for an error text: those that fit in about 256
// bytes, then how many more; "none" for none.
func keyList(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, k := range keys {
		if b.Len() > 256 {
			fmt.Fprintf(&b, " and %d more", len(keys)-i)
			break
		}
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString("'" + cleanArg([]byte(k)) + "'")
	}
	return b.String()
}
