package server

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/kv"
)

// arity is each command's number of arguments, its name included, as
// Redis counts it: n exactly, or -n for at least n.
var arity = map[string]int{
	"get": 2, "set": -3, "setnx": 3, "del": -2, "exists": -2, "expire": -3, "pexpire": -3,
	"ttl": 2, "pttl": 2, "incr": 2, "incrby": 3, "decr": 2, "decrby": 3, "mget": -2, "mset": -3,
	"delifeq": 3, "scan": -2, "info": -1, "dbsize": 1, "ping": -1, "echo": 2, "hello": -1,
	"auth": -2, "client": -2, "select": 2, "quit": -1, "command": -1, "config": -2,
}

// Redis's texts for the errors every command may answer.
const (
	errNoAuth     = "NOAUTH Authentication required."
	errSyntax     = "ERR syntax error"
	errNotInteger = "ERR value is not an integer or out of range"
	errWrongPass  = "WRONGPASS invalid username-password pair or user is disabled."
)

func wrongArgs(name []byte) string {
	return "ERR wrong number of arguments for '" + string(name) + "' command"
}

// dispatch answers one command.
func (c *conn) dispatch(args [][]byte) {
	var nb [16]byte
	name := lower(nb[:], args[0])
	n, known := arity[string(name)]
	if !known {
		c.unknown(args)
		return
	}
	if !c.authed && string(name) != "auth" && string(name) != "hello" && string(name) != "quit" {
		c.w.Error(errNoAuth)
		return
	}
	if n > 0 && len(args) != n || n < 0 && len(args) < -n {
		c.w.Error(wrongArgs(name))
		return
	}
	st := c.s.cfg.Store
	switch string(name) {
	case "get":
		c.get(string(args[1]))
	case "set":
		c.set(args)
	case "setnx":
		out, err := st.SetNX(string(args[1]), args[2], 0)
		if c.storeErr(err) {
			return
		}
		c.w.Int(boolInt(out == kv.Inserted))
	case "del":
		c.del(args[1:])
	case "exists":
		var count int64
		for _, k := range args[1:] {
			ok, err := st.Exists(string(k))
			if c.storeErr(err) {
				return
			}
			count += boolInt(ok)
		}
		c.w.Int(count)
	case "expire", "pexpire":
		c.expire(name, args)
	case "ttl", "pttl":
		// The time left is cut to the unit, never rounded up (Redis's
		// TTL rounds to the nearest second): a lock never looks
		// longer-lived than it is, as the ephpm command shows it.
		ttl, found, err := st.PTTL(string(args[1]))
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
	case "incr", "decr", "incrby", "decrby":
		c.incr(name, args)
	case "mget":
		c.mget(args[1:])
	case "mset":
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
		if n, err := st.SetMany(keys, values, 0); err != nil {
			if n > 0 { // each key is set on its own (README): say which were
				err = fmt.Errorf("MSET set %d of its %d keys (%s), then failed: %w", n, len(keys), keyList(keys[:n]), err)
			}
			c.storeErr(err)
			return
		}
		c.w.OK()
	case "delifeq":
		ok, err := st.DelIfEq(string(args[1]), args[2])
		if c.storeErr(err) {
			return
		}
		c.w.Int(boolInt(ok))
	case "scan":
		c.scan(args)
	case "info":
		c.info(args[1:])
	case "dbsize":
		stats, err := st.Stats()
		if c.storeErr(err) {
			return
		}
		c.w.Int(stats.Keys)
	case "ping":
		switch {
		case len(args) > 2:
			c.w.Error(wrongArgs(name))
		case len(args) == 2:
			c.w.Bulk(args[1])
		default:
			c.w.Simple("PONG")
		}
	case "echo":
		c.w.Bulk(args[1])
	case "hello":
		c.hello(args)
	case "auth":
		c.auth(args)
	case "client":
		c.client(args)
	case "select":
		if db, err := strconv.Atoi(string(args[1])); err != nil {
			c.w.Error(errNotInteger)
		} else if db != 0 {
			c.w.Error("ERR DB index is out of range")
		} else {
			c.w.OK()
		}
	case "quit":
		c.w.OK()
		c.quit = true
	case "command":
		// No command table to describe: an empty one (redis-cli asks
		// for it in interactive mode and does without).
		var sb [16]byte
		if len(args) > 1 && string(lower(sb[:], args[1])) == "count" {
			c.w.Int(int64(len(arity)))
		} else {
			c.w.Array(0)
		}
	case "config":
		var sb [16]byte
		if string(lower(sb[:], args[1])) == "get" {
			c.w.Map(0) // no setting of Redis's is one here (redis-benchmark asks)
		} else {
			c.w.Error("ERR unknown subcommand '" + cleanArg(args[1]) + "'. Try CONFIG HELP.")
		}
	}
}

func (c *conn) unknown(args [][]byte) {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.WriteString(cleanArg(args[0]))
	b.WriteString("', with args beginning with: ")
	for _, a := range args[1:] {
		if b.Len() > 256 {
			break
		}
		b.WriteString("'" + cleanArg(a) + "' ")
	}
	c.w.Error(b.String())
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// storeErr answers err, if there is one, as Redis answers the same
// fault, and reports whether there was.
func (c *conn) storeErr(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case errors.Is(err, kv.ErrNotInteger):
		c.w.Error(errNotInteger)
	case errors.Is(err, kv.ErrOverflow):
		c.w.Error("ERR increment or decrement would overflow")
	case errors.Is(err, kv.ErrNoMemory):
		c.w.Error("OOM command not allowed when used memory > 'maxmemory': " + err.Error())
	default:
		c.w.Error("ERR " + err.Error())
	}
	return true
}

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

// parseTTL reads a count of unit (time.Second, time.Millisecond) for the
// command called name: Redis's errors for a word and for a time that is
// not positive or too large.
func (c *conn) parseTTL(arg []byte, unit time.Duration, name string) (time.Duration, bool) {
	n, err := strconv.ParseInt(string(arg), 10, 64)
	if err != nil {
		c.w.Error(errNotInteger)
		return 0, false
	}
	if n <= 0 || n > math.MaxInt64/int64(unit) || kv.CheckTTL(time.Duration(n)*unit) != nil {
		c.w.Error("ERR invalid expire time in '" + name + "' command")
		return 0, false
	}
	return time.Duration(n) * unit, true
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
		if out == kv.Inserted {
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

// scan is SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]: one page of
// Scanner.Scan, filtered by MATCH as Redis filters (after the walk: a
// page may be empty with the walk not done). Every value here is a
// string: another TYPE matches nothing. A page that skipped a damaged
// part of the store (a corrupt shard) is answered with an error naming it
// and the cursor the walk goes on from: a Redis client takes a SCAN
// reply for the store's content, and would take the walk's end for "no
// more keys" where a shard's keys were never read.
func (c *conn) scan(args [][]byte) {
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		c.w.Error("ERR invalid cursor")
		return
	}
	count := 10
	var pattern []byte
	onlyStrings := true
	var ob [16]byte
	for i := 2; i < len(args); i += 2 {
		if i+1 == len(args) {
			c.w.Error(errSyntax)
			return
		}
		switch string(lower(ob[:], args[i])) {
		case "match":
			pattern = args[i+1]
		case "count":
			n, err := strconv.Atoi(string(args[i+1]))
			if err != nil {
				c.w.Error(errNotInteger)
				return
			}
			if n < 1 {
				c.w.Error(errSyntax)
				return
			}
			count = min(n, 100000)
		case "type":
			onlyStrings = string(lower(ob[:], args[i+1])) == "string"
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	page, err := c.s.cfg.Store.Scan(literalPrefix(pattern), cursor, count, false)
	if errors.Is(err, kv.ErrInvalidArgument) {
		c.w.Error("ERR invalid cursor")
		return
	}
	if c.storeErr(err) {
		return
	}
	if len(page.Skipped) > 0 {
		for _, why := range page.Skipped {
			c.s.logf("SCAN skipped: %s", why)
		}
		c.w.Error(fmt.Sprintf("ERR SCAN could not read part of the store: %s (the walk goes on from cursor %d without it)",
			oneLine(strings.Join(page.Skipped, "; ")), page.Next))
		return
	}
	keys := page.Keys[:0]
	for _, k := range page.Keys {
		if onlyStrings && (pattern == nil || Match(pattern, []byte(k.Key))) {
			keys = append(keys, k)
		}
	}
	c.w.Array(2)
	c.w.BulkString(strconv.FormatUint(page.Next, 10))
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.BulkString(k.Key)
	}
}

func (c *conn) auth(args [][]byte) {
	if len(args) > 3 {
		c.w.Error(errSyntax)
		return
	}
	if c.s.cfg.Password == "" {
		c.w.Error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	var user []byte
	if len(args) == 3 {
		user = args[1]
	}
	if !c.s.checkPassword(user, args[len(args)-1]) {
		c.w.Error(errWrongPass)
		return
	}
	c.setAuthed(true)
	c.w.OK()
}

// hello is HELLO [protover [AUTH user pass] [SETNAME name]]: it chooses
// RESP2 or RESP3 and answers the server's map.
func (c *conn) hello(args [][]byte) {
	proto := c.w.RESP
	if len(args) > 1 {
		v, err := strconv.Atoi(string(args[1]))
		if err != nil {
			c.w.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			c.w.Error("NOPROTO unsupported protocol version")
			return
		}
		proto = v
	}
	var ob [16]byte
	name, setName := "", false
	authed := c.authed
	for i := 2; i < len(args); i++ {
		switch string(lower(ob[:], args[i])) {
		case "auth":
			if i+2 >= len(args) {
				c.w.Error("ERR Syntax error in HELLO option 'auth'")
				return
			}
			if c.s.cfg.Password == "" && string(args[i+1]) == "default" {
				authed = true // Redis's default user with no password: any password
			} else if c.s.cfg.Password != "" && c.s.checkPassword(args[i+1], args[i+2]) {
				authed = true
			} else {
				c.w.Error(errWrongPass)
				return
			}
			i += 2
		case "setname":
			if i+1 >= len(args) {
				c.w.Error("ERR Syntax error in HELLO option 'setname'")
				return
			}
			if !validName(args[i+1]) {
				c.w.Error(errBadName)
				return
			}
			name, setName = string(args[i+1]), true
			i++
		default:
			c.w.Error("ERR Syntax error in HELLO option '" + cleanArg(args[i]) + "'")
			return
		}
	}
	if !authed {
		c.w.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	c.setAuthed(true)
	if setName {
		c.name = name
	}
	c.w.RESP = proto
	c.w.Map(7)
	c.w.BulkString("server")
	c.w.BulkString("ephpm")
	// The Redis version whose commands and replies this endpoint
	// follows, for clients that decide by it.
	c.w.BulkString("version")
	c.w.BulkString(redisVersion)
	c.w.BulkString("proto")
	c.w.Int(int64(proto))
	c.w.BulkString("id")
	c.w.Int(c.id)
	c.w.BulkString("mode")
	c.w.BulkString("standalone")
	c.w.BulkString("role")
	c.w.BulkString("master")
	c.w.BulkString("modules")
	c.w.Array(0)
}

// redisVersion is the Redis release whose replies the endpoint gives.
const redisVersion = "7.0.0"

const errBadName = "ERR Client names cannot contain spaces, newlines or special characters."

func validName(b []byte) bool {
	for _, c := range b {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

func (c *conn) client(args [][]byte) {
	var ob [16]byte
	sub := string(lower(ob[:], args[1]))
	switch {
	case sub == "setname" && len(args) == 3:
		if !validName(args[2]) {
			c.w.Error(errBadName)
			return
		}
		c.name = string(args[2])
		c.w.OK()
	case sub == "getname" && len(args) == 2:
		if c.name == "" {
			c.w.Null()
		} else {
			c.w.BulkString(c.name)
		}
	case sub == "id" && len(args) == 2:
		c.w.Int(c.id)
	case sub == "setinfo" && len(args) == 4:
		c.w.OK()
	case sub == "setname" || sub == "getname" || sub == "id" || sub == "setinfo":
		c.w.Error(fmt.Sprintf("ERR wrong number of arguments for 'client|%s' command", sub))
	default:
		c.w.Error("ERR unknown subcommand '" + cleanArg(args[1]) + "'. Try CLIENT HELP.")
	}
}
