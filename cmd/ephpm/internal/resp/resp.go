// Package resp reads Redis's protocol (RESP) commands and writes its
// replies, for a server: RESP2 by default, RESP3 once a client asked for
// it (HELLO 3). The reader parses a command out of a buffer without
// copying its arguments, and reads from the connection only when the
// buffer holds no whole command; the writer buffers replies and writes
// them when told to (Flush) or when its buffer grows large. A server that
// flushes just before its reader would block (Reader.BeforeRead) answers
// a pipeline of N commands with one write, not N: what makes pipelining
// fast.
package resp

import (
	"bytes"
	"errors"
	"io"
	"strconv"
)

// Limits, as Redis's defaults (proto-max-bulk-len is 512 MiB there; this
// server stores no value larger than 256 MiB, contract.MaxValueLen).
const (
	MaxArgs    = 1024 * 1024
	MaxBulkLen = 256<<20 + 1024
	// MaxInline is the longest inline command (a line without '*').
	MaxInline = 64 << 10
)

// Limits bound the multibulk command a reader takes: its number of
// arguments and each one's length, with the texts of the errors that
// refuse more. An inline command is bounded by MaxInline.
type Limits struct {
	Args, Bulk       int
	argsErr, bulkErr string
}

var (
	// Authenticated are the limits for a client that may use the store.
	Authenticated = Limits{MaxArgs, MaxBulkLen, "invalid multibulk length", "invalid bulk length"}
	// Unauthenticated are Redis's limits before AUTH (since
	// CVE-2021-32675), with its texts: at most 10 arguments of at most
	// 16 KiB, so that a client that has not authenticated makes the
	// server hold at most about 160 KiB for it (256 MiB otherwise).
	Unauthenticated = Limits{10, 16 << 10, "unauthenticated multibulk length", "unauthenticated bulk length"}
)

// ProtocolError is a malformed command; the connection cannot be read
// further. Its text is Redis's for the same fault.
type ProtocolError string

func (e ProtocolError) Error() string { return "Protocol error: " + string(e) }

// Parse parses one command at the start of buf. It returns the command's
// arguments (slices of buf, appended to args[:0]) and the bytes it
// took; n is 0 when buf holds no whole command yet (read more and call
// again). An empty line, or an array of no elements, is a command of no
// arguments (n > 0, len 0): skip it. A malformed command is a
// ProtocolError. Parse never reads outside buf, whatever it holds.
func Parse(buf []byte, args [][]byte) (_ [][]byte, n int, err error) {
	var p parser
	p.reset()
	n, err = p.advance(buf, &Authenticated)
	if n == 0 || err != nil {
		return args[:0], 0, err
	}
	return p.take(buf[:n], args)
}

// parser is the state of a command parsed in steps, as its bytes arrive:
// what it has read of the command stays read, so a command that arrives
// in many reads is parsed once, not once a read (which made a command of
// N arguments cost N²).
type parser struct {
	count int   // the multibulk command's arguments; -1 before its header
	pos   int   // where parsing goes on, from the command's start
	spans []int // each argument read so far: its start and end, from the command's start
	seen  int   // an inline command's bytes searched for its line's end
}

func (p *parser) reset() {
	p.count, p.pos, p.spans, p.seen = -1, 0, p.spans[:0], 0
}

// advance parses on in buf, which holds the command from its start (with
// at least the bytes it held at the last call): n > 0 once the command
// is whole (then take returns it), 0 when more is needed.
func (p *parser) advance(buf []byte, lim *Limits) (n int, err error) {
	if len(buf) == 0 {
		return 0, nil
	}
	if buf[0] != '*' {
		end := bytes.IndexByte(buf[p.seen:], '\n')
		if end < 0 {
			p.seen = len(buf)
			if len(buf) > MaxInline {
				return 0, ProtocolError("too big inline request")
			}
			return 0, nil
		}
		return p.seen + end + 1, nil
	}
	if p.count < 0 {
		count, next, err := parseLen(buf, 1, MaxArgs, "invalid multibulk length")
		if next == 0 || err != nil {
			return 0, err
		}
		if count > lim.Args {
			return 0, ProtocolError(lim.argsErr)
		}
		p.count, p.pos = max(count, 0), next
	}
	for len(p.spans) < 2*p.count {
		if p.pos >= len(buf) {
			return 0, nil
		}
		if buf[p.pos] != '$' {
			return 0, ProtocolError("expected '$', got '" + string(buf[p.pos]) + "'")
		}
		l, next, err := parseLen(buf, p.pos+1, MaxBulkLen, "invalid bulk length")
		if next == 0 || err != nil {
			return 0, err
		}
		if l < 0 {
			return 0, ProtocolError("invalid bulk length")
		}
		if l > lim.Bulk {
			return 0, ProtocolError(lim.bulkErr)
		}
		end := next + l
		if end+2 > len(buf) {
			return 0, nil // the header is read again when more came: a few bytes
		}
		if buf[end] != '\r' || buf[end+1] != '\n' {
			return 0, ProtocolError("invalid bulk length")
		}
		p.spans = append(p.spans, next, end)
		p.pos = end + 2
	}
	return p.pos, nil
}

// take returns the whole command cmd that advance parsed, its arguments
// appended to args[:0] (slices of cmd, or of their own for an inline
// command's quoted words), and its length.
func (p *parser) take(cmd []byte, args [][]byte) ([][]byte, int, error) {
	if cmd[0] != '*' {
		return parseInline(cmd, args[:0])
	}
	args = args[:0]
	for i := 0; i < len(p.spans); i += 2 {
		a, b := p.spans[i], p.spans[i+1]
		args = append(args, cmd[a:b:b])
	}
	return args, len(cmd), nil
}

// parseLen reads the decimal number (possibly negative) from buf[at] up
// to "\r\n", at most max; next is the offset after the line, 0 when the
// line is not whole yet.
func parseLen(buf []byte, at, max int, what string) (v, next int, err error) {
	end := bytes.IndexByte(buf[at:], '\n')
	if end < 0 {
		if len(buf)-at > 32 {
			return 0, 0, ProtocolError(what)
		}
		return 0, 0, nil
	}
	end += at
	if end == at || buf[end-1] != '\r' {
		return 0, 0, ProtocolError(what)
	}
	n, err := strconv.ParseInt(string(buf[at:end-1]), 10, 64)
	if err != nil || n > int64(max) || n < -1 {
		return 0, 0, ProtocolError(what)
	}
	return int(n), end + 1, nil
}

// parseInline parses a line of words separated by spaces (what telnet
// sends), with "double" and 'single' quoted words as Redis reads them:
// within double quotes \n \r \t \b \a \\ \" and \xHH escapes.
func parseInline(buf []byte, args [][]byte) ([][]byte, int, error) {
	end := bytes.IndexByte(buf, '\n')
	if end < 0 {
		if len(buf) > MaxInline {
			return args, 0, ProtocolError("too big inline request")
		}
		return args[:0], 0, nil
	}
	line := buf[:end]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	for i := 0; i < len(line); {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		switch line[i] {
		case '"', '\'':
			q := line[i]
			var w []byte
			j := i + 1
			closed := false
			for j < len(line) {
				c := line[j]
				if c == q {
					closed = true
					j++
					break
				}
				if q == '"' && c == '\\' && j+1 < len(line) {
					j++
					switch e := line[j]; e {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					case 'x':
						if j+2 < len(line) {
							if v, err := strconv.ParseUint(string(line[j+1:j+3]), 16, 8); err == nil {
								c = byte(v)
								j += 2
								break
							}
						}
						c = 'x'
					default:
						c = e
					}
				} else if q == '\'' && c == '\\' && j+1 < len(line) && line[j+1] == '\'' {
					j++
					c = '\''
				}
				w = append(w, c)
				j++
			}
			if !closed || j < len(line) && line[j] != ' ' && line[j] != '\t' {
				return args, 0, ProtocolError("unbalanced quotes in request")
			}
			if w == nil {
				w = []byte{}
			}
			args = append(args, w)
			i = j
		default:
			j := i
			for j < len(line) && line[j] != ' ' && line[j] != '\t' {
				j++
			}
			args = append(args, line[i:j:j])
			i = j
		}
	}
	return args, end + 1, nil
}

// Reader reads commands from a connection.
type Reader struct {
	rd   io.Reader
	buf  []byte
	r, w int
	args [][]byte
	p    parser
	// Limits bound each command (Authenticated unless set): a server
	// sets Unauthenticated until the client authenticates.
	Limits Limits
	// BeforeRead, if set, is called just before the reader would read
	// from the connection: the server flushes its replies there.
	BeforeRead func() error
}

// NewReader reads from rd.
func NewReader(rd io.Reader) *Reader {
	r := &Reader{rd: rd, buf: make([]byte, 16<<10), Limits: Authenticated}
	r.p.reset()
	return r
}

// Buffered is how many bytes the reader holds unparsed.
func (r *Reader) Buffered() int { return r.w - r.r }

// Next returns the next command's arguments (never none): slices of the
// reader's buffer, valid until the next call. It returns io.EOF once the
// connection ends between commands, a ProtocolError for a malformed one
// or one beyond r.Limits. A command that arrives in many reads is parsed
// as it arrives, each byte once.
func (r *Reader) Next() ([][]byte, error) {
	for {
		n, err := r.p.advance(r.buf[r.r:r.w], &r.Limits)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			cmd := r.buf[r.r : r.r+n]
			r.r += n
			args, _, err := r.p.take(cmd, r.args)
			r.p.reset()
			r.args = args
			if err != nil {
				return nil, err
			}
			if len(args) == 0 {
				continue
			}
			return args, nil
		}
		if err := r.fill(); err != nil {
			return nil, err
		}
	}
}

// fill reads more: the unparsed bytes move to the front (the parser's
// state is kept from the command's start, so it moves with them), and
// the buffer grows when they fill it (a large value).
func (r *Reader) fill() error {
	if r.r > 0 {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	if r.w == len(r.buf) {
		if len(r.buf) >= MaxBulkLen+64 {
			return ProtocolError("invalid bulk length")
		}
		nb := make([]byte, min(2*len(r.buf), MaxBulkLen+64))
		copy(nb, r.buf[:r.w])
		r.buf = nb
	}
	if r.BeforeRead != nil {
		if err := r.BeforeRead(); err != nil {
			return err
		}
	}
	n, err := r.rd.Read(r.buf[r.w:])
	r.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	if errors.Is(err, io.EOF) && r.w > r.r {
		return io.ErrUnexpectedEOF
	}
	return err
}
