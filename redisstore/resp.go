package redisstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// wireConn speaks RESP2 over one connection: it writes a command and reads
// its reply, with no pipelining, no push messages and no state beyond a
// read and a write buffer. It is used by one goroutine at a time.
//
// Any error other than a server's error reply leaves the connection in an
// unknown place in the stream (a reply may still come), so its owner must
// close it rather than reuse it.
type wireConn struct {
	nc  net.Conn
	raw *threadConn // the socket under nc (nc itself, or under TLS)

	wbuf     []byte
	rbuf     []byte
	rpos, rn int // unread bytes are rbuf[rpos:rn]

	// What the server has of the native commands, once learned (see
	// direct.doNative).
	native  native
	learned bool
}

// wireBufSize is the initial size of each buffer; a command grows its
// write buffer as needed, a long bulk reply is read straight into its
// destination.
const wireBufSize = 4096

func newWireConn(nc net.Conn, raw *threadConn) *wireConn {
	return &wireConn{nc: nc, raw: raw, wbuf: make([]byte, 0, wireBufSize), rbuf: make([]byte, wireBufSize)}
}

// redisError is an error reply from the server (its text, e.g. "NOSCRIPT
// No matching script"): the command was refused and the connection is
// fine.
type redisError string

func (e redisError) Error() string { return string(e) }

// RedisError makes a redisError a redis.Error, as go-redis's error replies
// are, so that one test tells a refusal from a failure on either path.
func (redisError) RedisError() {}

// errProtocol reports a reply this client does not expect (it sends only
// commands whose replies are a status, an error, an integer or a bulk
// string).
var errProtocol = errors.New("redis: unexpected reply")

// reply is a decoded reply other than an error: its kind is its RESP
// type byte ('+' status, ':' integer, '$' bulk string). For a bulk string,
// b holds it (in the caller's destination when it fitted, else freshly
// allocated) and null reports a nil bulk string; an integer is in n.
type reply struct {
	kind byte
	n    int64
	b    []byte
	null bool
}

// appendCommand encodes args as a RESP array of bulk strings. An argument
// is a string, a []byte or an int64 (anything else is a programming error
// and panics).
func appendCommand(buf []byte, args []any) []byte {
	buf = append(buf, '*')
	buf = strconv.AppendInt(buf, int64(len(args)), 10)
	buf = append(buf, '\r', '\n')
	for _, a := range args {
		switch v := a.(type) {
		case string:
			buf = appendBulk(buf, len(v))
			buf = append(buf, v...)
		case []byte:
			buf = appendBulk(buf, len(v))
			buf = append(buf, v...)
		case int64:
			var num [20]byte
			s := strconv.AppendInt(num[:0], v, 10)
			buf = appendBulk(buf, len(s))
			buf = append(buf, s...)
		default:
			panic(fmt.Sprintf("redisstore: argument of type %T", a))
		}
		buf = append(buf, '\r', '\n')
	}
	return buf
}

func appendBulk(buf []byte, n int) []byte {
	buf = append(buf, '$')
	buf = strconv.AppendInt(buf, int64(n), 10)
	return append(buf, '\r', '\n')
}

// roundTrip writes one command and reads its reply: a bulk string goes to
// dst when it fits (see reply). The deadlines bound the write and the read;
// zero means none.
func (c *wireConn) roundTrip(dst []byte, writeBy, readBy time.Time, args []any) (reply, error) {
	r, err, _ := c.roundTripThen(dst, writeBy, readBy, args, nil)
	return r, err
}

// roundTripThen is roundTrip with a second command, then, sent in the same
// write and its reply read after args's (then nil: none). r and err are
// args's; thenErr is then's error reply or a failure to read it, which
// leaves args's known outcome as it is (but the connection, after a
// failure other than an error reply, unusable).
func (c *wireConn) roundTripThen(dst []byte, writeBy, readBy time.Time, args, then []any) (r reply, err, thenErr error) {
	c.wbuf = appendCommand(c.wbuf[:0], args)
	if then != nil {
		c.wbuf = appendCommand(c.wbuf, then)
	}
	if cap(c.wbuf) > 64*wireBufSize {
		defer func() { c.wbuf = make([]byte, 0, wireBufSize) }() // do not keep a large value's buffer
	}
	if err := c.nc.SetWriteDeadline(writeBy); err != nil {
		return reply{}, err, nil
	}
	if _, err := c.nc.Write(c.wbuf); err != nil {
		return reply{}, err, nil
	}
	if err := c.nc.SetReadDeadline(readBy); err != nil {
		return reply{}, err, nil
	}
	r, err = c.readReply(dst)
	var refused redisError
	if then != nil && (err == nil || errors.As(err, &refused)) {
		_, thenErr = c.readReply(nil)
	}
	return r, err, thenErr
}

// readReply reads one reply. A server's error reply is a redisError.
func (c *wireConn) readReply(dst []byte) (reply, error) {
	line, err := c.readLine()
	if err != nil {
		return reply{}, err
	}
	if len(line) == 0 {
		return reply{}, errProtocol
	}
	switch line[0] {
	case '+':
		return reply{kind: '+'}, nil
	case '-':
		return reply{}, redisError(line[1:])
	case ':':
		n, err := strconv.ParseInt(string(line[1:]), 10, 64)
		if err != nil {
			return reply{}, errProtocol
		}
		return reply{kind: ':', n: n}, nil
	case '$':
		n, err := strconv.Atoi(string(line[1:]))
		switch {
		case err != nil || n < -1:
			return reply{}, errProtocol
		case n == -1:
			return reply{kind: '$', null: true}, nil
		}
		return c.readBulk(dst, n)
	}
	return reply{}, errProtocol
}

// readLine returns the next line without its CRLF; it stays valid until
// the next read.
func (c *wireConn) readLine() ([]byte, error) {
	for {
		if i := bytes.Index(c.rbuf[c.rpos:c.rn], []byte("\r\n")); i >= 0 {
			line := c.rbuf[c.rpos : c.rpos+i]
			c.rpos += i + 2
			return line, nil
		}
		if c.rpos == 0 && c.rn == len(c.rbuf) {
			return nil, errProtocol // a line longer than the buffer: not a reply we sent for
		}
		if err := c.fill(); err != nil {
			return nil, err
		}
	}
}

// fill moves the unread bytes to the front and reads more after them.
func (c *wireConn) fill() error {
	c.rn = copy(c.rbuf, c.rbuf[c.rpos:c.rn])
	c.rpos = 0
	n, err := c.nc.Read(c.rbuf[c.rn:])
	c.rn += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// readBulk reads an n-byte bulk string and its CRLF.
func (c *wireConn) readBulk(dst []byte, n int) (reply, error) {
	var b []byte
	if n <= len(dst) {
		b = dst[:n]
	} else {
		b = make([]byte, n)
	}
	got := copy(b, c.rbuf[c.rpos:c.rn])
	c.rpos += got
	if got < n {
		if _, err := io.ReadFull(c.nc, b[got:]); err != nil {
			return reply{}, err
		}
	}
	for c.rn-c.rpos < 2 {
		if err := c.fill(); err != nil {
			return reply{}, err
		}
	}
	if c.rbuf[c.rpos] != '\r' || c.rbuf[c.rpos+1] != '\n' {
		return reply{}, errProtocol
	}
	c.rpos += 2
	return reply{kind: '$', b: b}, nil
}

// idleAndAlive reports whether a connection taken from the idle list may
// carry a command: nothing has arrived on it since its last reply (no end
// of stream from a server that closed it, no stray bytes). One
// non-blocking peek, as phpredis checks a persistent socket before use.
func (c *wireConn) idleAndAlive() bool {
	return c.rpos == c.rn && c.raw.nothingPending()
}

func (c *wireConn) close() { c.nc.Close() }
