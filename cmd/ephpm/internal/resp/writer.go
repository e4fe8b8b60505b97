package resp

import (
	"io"
	"strconv"
	"strings"
)

// Writer buffers replies. RESP3 changes how nulls, maps and doubles are
// written; the rest is the same in both.
type Writer struct {
	w    io.Writer
	buf  []byte
	err  error
	RESP int // 2 or 3
}

// flushAt is the buffered size at which a reply is written out at once.
const flushAt = 64 << 10

// NewWriter writes RESP2 to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, buf: make([]byte, 0, 16<<10), RESP: 2} }

// Flush writes what is buffered; the first write error stays the error
// of every later Flush.
func (w *Writer) Flush() error {
	if w.err == nil && len(w.buf) > 0 {
		_, w.err = w.w.Write(w.buf)
	}
	w.buf = w.buf[:0]
	return w.err
}

// Buffered is how many bytes wait for Flush.
func (w *Writer) Buffered() int { return len(w.buf) }

func (w *Writer) grew() {
	if len(w.buf) >= flushAt {
		w.Flush()
	}
}

// line appends prefix, s (with CR and LF made spaces: a status or an
// error is one line), CRLF.
func (w *Writer) line(prefix byte, s string) {
	w.buf = append(w.buf, prefix)
	if strings.ContainsAny(s, "\r\n") {
		s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	}
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
	w.grew()
}

// Simple writes a status reply: +s.
func (w *Writer) Simple(s string) { w.line('+', s) }

// OK writes +OK.
func (w *Writer) OK() { w.buf = append(w.buf, "+OK\r\n"...); w.grew() }

// Error writes an error reply: -s (s begins with its code: "ERR ...").
func (w *Writer) Error(s string) { w.line('-', s) }

// Int writes an integer reply.
func (w *Writer) Int(n int64) {
	w.buf = append(w.buf, ':')
	w.buf = strconv.AppendInt(w.buf, n, 10)
	w.buf = append(w.buf, '\r', '\n')
	w.grew()
}

// Bulk writes a bulk string.
func (w *Writer) Bulk(b []byte) {
	w.buf = append(w.buf, '$')
	w.buf = strconv.AppendInt(w.buf, int64(len(b)), 10)
	w.buf = append(w.buf, '\r', '\n')
	if len(b) > flushAt {
		w.Flush()
		if w.err == nil {
			_, w.err = w.w.Write(b)
		}
	} else {
		w.buf = append(w.buf, b...)
	}
	w.buf = append(w.buf, '\r', '\n')
	w.grew()
}

// BulkString writes s as a bulk string.
func (w *Writer) BulkString(s string) {
	w.buf = append(w.buf, '$')
	w.buf = strconv.AppendInt(w.buf, int64(len(s)), 10)
	w.buf = append(w.buf, '\r', '\n')
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
	w.grew()
}

// Null writes the null reply: $-1 in RESP2, _ in RESP3.
func (w *Writer) Null() {
	if w.RESP == 3 {
		w.buf = append(w.buf, "_\r\n"...)
	} else {
		w.buf = append(w.buf, "$-1\r\n"...)
	}
	w.grew()
}

// Array writes the header of an array of n elements (the elements follow).
func (w *Writer) Array(n int) { w.header('*', n) }

// Map writes the header of a map of n pairs (2n elements follow, key then
// value): %n in RESP3, an array of 2n in RESP2.
func (w *Writer) Map(n int) {
	if w.RESP == 3 {
		w.header('%', n)
	} else {
		w.header('*', 2*n)
	}
}

func (w *Writer) header(c byte, n int) {
	w.buf = append(w.buf, c)
	w.buf = strconv.AppendInt(w.buf, int64(n), 10)
	w.buf = append(w.buf, '\r', '\n')
	w.grew()
}

// Verbatim writes text as RESP3's verbatim string of format "txt" (a bulk
// string in RESP2), as Redis answers INFO.
func (w *Writer) Verbatim(text string) {
	if w.RESP != 3 {
		w.BulkString(text)
		return
	}
	w.buf = append(w.buf, '=')
	w.buf = strconv.AppendInt(w.buf, int64(len(text)+4), 10)
	w.buf = append(w.buf, "\r\ntxt:"...)
	w.buf = append(w.buf, text...)
	w.buf = append(w.buf, '\r', '\n')
	w.grew()
}
