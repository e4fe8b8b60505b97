// The connection commands: AUTH, HELLO, CLIENT, SELECT, PING (ECHO and
// QUIT are a line each in dispatch). They change or describe this
// connection only, never the store.

package server

import (
	"fmt"
	"strconv"
)

// redisVersion is the Redis release whose replies the endpoint gives.
const redisVersion = "7.0.0"

const errBadName = "ERR Client names cannot contain spaces, newlines or special characters."

// auth is AUTH [user] password, as Redis's requirepass: the user is
// "default", and with no password configured AUTH is an error.
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

// validName reports whether b may name a client: printable ASCII, no
// space, as Redis requires.
func validName(b []byte) bool {
	for _, c := range b {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

// client is CLIENT SETNAME, GETNAME, ID and SETINFO (accepted and
// ignored, as clients send it on connecting).
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

// selectDB is SELECT index: only database 0 exists.
func (c *conn) selectDB(arg []byte) {
	if db, err := strconv.Atoi(string(arg)); err != nil {
		c.w.Error(errNotInteger)
	} else if db != 0 {
		c.w.Error("ERR DB index is out of range")
	} else {
		c.w.OK()
	}
}

// ping is PING [message]: PONG, or the message as a bulk string.
func (c *conn) ping(name []byte, args [][]byte) {
	switch {
	case len(args) > 2:
		c.w.Error(wrongArgs(name))
	case len(args) == 2:
		c.w.Bulk(args[1])
	default:
		c.w.Simple("PONG")
	}
}
