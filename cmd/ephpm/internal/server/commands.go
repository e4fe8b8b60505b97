// The command table: each command's arity, the dispatch to the method
// that serves it, and the error replies every command may give. The
// commands themselves are in the cmd_*.go files, one file a group as
// Redis groups them: cmd_strings.go (GET, SET, MGET, MSET, INCR and its
// kin), cmd_keys.go (DEL, EXISTS, EXPIRE, TTL and their kin),
// cmd_locks.go (SETNX, DELIFEQ), cmd_scan.go (SCAN), cmd_connection.go
// (AUTH, HELLO, CLIENT, SELECT, PING, ECHO, QUIT) and cmd_server.go
// (INFO, DBSIZE, COMMAND, CONFIG).

package server

import (
	"errors"
	"strings"

	"github.com/ephpm/ephpm/contract"
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

// wrongArgs is Redis's reply to a command called with a number of
// arguments its arity does not allow.
func wrongArgs(name []byte) string {
	return "ERR wrong number of arguments for '" + string(name) + "' command"
}

// dispatch answers one command: an unknown one, one sent before AUTH
// (but AUTH, HELLO and QUIT) and one of the wrong arity are refused with
// Redis's texts; any other is served by its method, which writes its
// reply.
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
	switch string(name) {
	case "get":
		c.get(string(args[1]))
	case "set":
		c.set(args)
	case "setnx":
		c.setnx(string(args[1]), args[2])
	case "del":
		c.del(args[1:])
	case "exists":
		c.exists(args[1:])
	case "expire", "pexpire":
		c.expire(name, args)
	case "ttl", "pttl":
		c.ttl(name, string(args[1]))
	case "incr", "decr", "incrby", "decrby":
		c.incr(name, args)
	case "mget":
		c.mget(args[1:])
	case "mset":
		c.mset(name, args)
	case "delifeq":
		c.delIfEq(string(args[1]), args[2])
	case "scan":
		c.scan(args)
	case "info":
		c.info(args[1:])
	case "dbsize":
		c.dbsize()
	case "ping":
		c.ping(name, args)
	case "echo":
		c.w.Bulk(args[1])
	case "hello":
		c.hello(args)
	case "auth":
		c.auth(args)
	case "client":
		c.client(args)
	case "select":
		c.selectDB(args[1])
	case "quit":
		c.w.OK()
		c.quit = true
	case "command":
		c.command(args)
	case "config":
		c.config(args)
	}
}

// unknown answers a command the table does not have, with Redis's text
// (the arguments quoted up to about 256 bytes).
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

// boolInt is Redis's integer reply for a yes or no: 1 or 0.
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
	case errors.Is(err, contract.ErrNotInteger):
		c.w.Error(errNotInteger)
	case errors.Is(err, contract.ErrOverflow):
		c.w.Error("ERR increment or decrement would overflow")
	case errors.Is(err, contract.ErrNoMemory):
		c.w.Error("OOM command not allowed when used memory > 'maxmemory': " + err.Error())
	default:
		c.w.Error("ERR " + err.Error())
	}
	return true
}
