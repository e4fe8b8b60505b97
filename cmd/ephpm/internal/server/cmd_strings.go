// The string commands: GET, SET (with NX, IFEQ, GET, EX, PX), MGET,
// MSET, INCR, DECR, INCRBY, DECRBY. Each is the store method PHP's
// function of the same job reaches.

package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
)

// get answers key's value as a bulk string, or the null reply.
func (c *conn) get(key string) {
	v, found, err := c.read(key)
	switch {
	case c.storeErr(err):
	case !found:
		c.w.Null()
	default:
		c.w.Bulk(v)
	}
}

// read returns key's value, in c.buf while it fits (valid until the next
// read), or found false.
func (c *conn) read(key string) (v []byte, found bool, err error) {
	st := c.s.cfg.Store
	buf := c.buf
	for {
		n, found, err := st.GetInto(key, buf)
		if err != nil || !found {
			return nil, false, err
		}
		if n <= len(buf) {
			return buf[:n], true, nil
		}
		// Larger than the buffer: again into one of its size (the value
		// may have changed meanwhile: then again).
		buf = make([]byte, n)
		if n <= getBufMax {
			c.buf = buf
		}
	}
}

// mget is MGET: every key is read first, and any failure is the one
// reply, an error, so that no array holds an error a client would take
// for a value (or hand on as one). Each key is read on its own, as
// ephpm_kv_get_many reads them: the reply is no snapshot.
func (c *conn) mget(keys [][]byte) {
	values := make([][]byte, len(keys)) // nil: no entry
	for i, k := range keys {
		v, found, err := c.read(string(k))
		if err != nil {
			c.storeErr(fmt.Errorf("MGET could not read key '%s': %w", cleanArg(k), err))
			return
		}
		if found {
			values[i] = append([]byte{}, v...)
		}
	}
	c.w.Array(len(values))
	for _, v := range values {
		if v == nil {
			c.w.Null()
		} else {
			c.w.Bulk(v)
		}
	}
}

// mset is MSET key value [key value ...]: Backend.SetMany, as
// ephpm_kv_set_many. Each key is set on its own, not the batch at once:
// a failure after the first key says which keys were set.
func (c *conn) mset(name []byte, args [][]byte) {
	if len(args)%2 != 1 {
		c.w.Error(wrongArgs(name))
		return
	}
	keys := make([]string, 0, len(args)/2)
	values := make([][]byte, 0, len(args)/2)
	for i := 1; i < len(args); i += 2 {
		keys = append(keys, string(args[i]))
		values = append(values, args[i+1])
	}
	if n, err := c.s.cfg.Store.SetMany(keys, values, 0); err != nil {
		if n > 0 { // each key is set on its own (README): say which were
			err = fmt.Errorf("MSET set %d of its %d keys (%s), then failed: %w", n, len(keys), keyList(keys[:n]), err)
		}
		c.storeErr(err)
		return
	}
	c.w.OK()
}

// set is SET key value [NX | IFEQ comparison] [GET] [EX s | PX ms]:
// plain, it is Backend.Set; NX alone is Backend.SetNX (the lock PHP's
// ephpm_kv_setnx takes); with GET or IFEQ it is CondSetter.SetCond.
func (c *conn) set(args [][]byte) {
	var nx, get, ifeq, hasTTL bool
	var cmp []byte
	var ttl time.Duration
	var ob [16]byte
	for i := 3; i < len(args); i++ {
		switch opt := string(lower(ob[:], args[i])); opt {
		case "nx":
			if ifeq {
				c.w.Error(errSyntax)
				return
			}
			nx = true
		case "get":
			get = true
		case "ex", "px":
			if hasTTL || i+1 == len(args) {
				c.w.Error(errSyntax)
				return
			}
			unit := time.Second
			if opt == "px" {
				unit = time.Millisecond
			}
			var ok bool
			if ttl, ok = c.parseTTL(args[i+1], unit, "set"); !ok {
				return
			}
			hasTTL = true
			i++
		case "ifeq":
			if nx || ifeq || i+1 == len(args) {
				c.w.Error(errSyntax)
				return
			}
			ifeq, cmp = true, args[i+1]
			i++
		case "xx", "keepttl", "exat", "pxat", "ifne", "ifdeq", "ifdne":
			c.w.Error("ERR SET's " + strings.ToUpper(opt) + " option is not supported by ephpm")
			return
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	st := c.s.cfg.Store
	key, value := string(args[1]), args[2]
	switch {
	case !nx && !ifeq && !get:
		if err := st.Set(key, value, ttl); c.storeErr(err) {
			return
		}
		c.w.OK()
	case nx && !get:
		out, err := st.SetNX(key, value, ttl)
		if c.storeErr(err) {
			return
		}
		if out == contract.Inserted {
			c.w.OK()
		} else {
			c.w.Null()
		}
	default:
		cond := backend.SetAlways
		if nx {
			cond = backend.SetIfAbsent
		} else if ifeq {
			cond = backend.SetIfEqual
			if cmp == nil {
				cmp = []byte{}
			}
		}
		stored, old, found, err := st.SetCond(key, value, ttl, cond, cmp, get)
		switch {
		case c.storeErr(err):
		case get && found:
			c.w.Bulk(old)
		case get || !stored:
			c.w.Null()
		default:
			c.w.OK()
		}
	}
}

// incr is INCR, DECR, INCRBY and DECRBY: one Backend.IncrBy each, with
// Redis's error for a delta that is no integer and for DECRBY of the
// smallest integer (its negation would overflow).
func (c *conn) incr(name []byte, args [][]byte) {
	delta := int64(1)
	switch string(name) {
	case "decr":
		delta = -1
	case "incrby", "decrby":
		d, err := strconv.ParseInt(string(args[2]), 10, 64)
		if err != nil {
			c.w.Error(errNotInteger)
			return
		}
		if string(name) == "decrby" {
			if d == math.MinInt64 {
				c.w.Error("ERR decrement would overflow")
				return
			}
			d = -d
		}
		delta = d
	}
	n, err := c.s.cfg.Store.IncrBy(string(args[1]), delta, 0)
	if c.storeErr(err) {
		return
	}
	c.w.Int(n)
}
