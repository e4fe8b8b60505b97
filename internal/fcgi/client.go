// Package fcgi is a minimal FastCGI client, enough to drive php-fpm from
// tests and benchmarks: one request per connection, responder role.
package fcgi

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"
)

const (
	typeBeginRequest = 1
	typeEndRequest   = 3
	typeParams       = 4
	typeStdin        = 5
	typeStdout       = 6
	typeStderr       = 7
	roleResponder    = 1
	requestID        = 1
)

func writeRecord(w io.Writer, typ byte, content []byte) error {
	pad := (8 - len(content)%8) % 8
	hdr := []byte{1, typ, 0, requestID, byte(len(content) >> 8), byte(len(content)), byte(pad), 0}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	if _, err := w.Write(content); err != nil {
		return err
	}
	_, err := w.Write(make([]byte, pad))
	return err
}

func appendLen(b []byte, n int) []byte {
	if n < 128 {
		return append(b, byte(n))
	}
	return binary.BigEndian.AppendUint32(b, uint32(n)|1<<31)
}

// Response is what php-fpm sent back.
type Response struct {
	Headers string // the CGI header block
	Body    []byte
	Stderr  []byte
}

// Do sends one request with params (SCRIPT_FILENAME, QUERY_STRING, ...)
// to the FastCGI server at network/addr and reads the whole response.
func Do(network, addr string, params map[string]string, timeout time.Duration) (*Response, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	w := bufio.NewWriter(c)

	if err := writeRecord(w, typeBeginRequest, []byte{0, roleResponder, 0, 0, 0, 0, 0, 0}); err != nil {
		return nil, err
	}
	var p []byte
	for k, v := range params {
		p = appendLen(appendLen(p, len(k)), len(v))
		p = append(append(p, k...), v...)
	}
	for len(p) > 0 {
		n := min(len(p), 65535)
		if err := writeRecord(w, typeParams, p[:n]); err != nil {
			return nil, err
		}
		p = p[n:]
	}
	for _, typ := range []byte{typeParams, typeStdin} {
		if err := writeRecord(w, typ, nil); err != nil {
			return nil, err
		}
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}

	var stdout, stderr bytes.Buffer
	r := bufio.NewReader(c)
	hdr := make([]byte, 8)
	for {
		if _, err := io.ReadFull(r, hdr); err != nil {
			return nil, fmt.Errorf("fcgi: reading a record: %w", err)
		}
		n, pad := int(binary.BigEndian.Uint16(hdr[4:6])), int(hdr[6])
		body := make([]byte, n+pad)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, err
		}
		switch hdr[1] {
		case typeStdout:
			stdout.Write(body[:n])
		case typeStderr:
			stderr.Write(body[:n])
		case typeEndRequest:
			resp := &Response{Stderr: stderr.Bytes()}
			out := stdout.Bytes()
			if i := bytes.Index(out, []byte("\r\n\r\n")); i >= 0 {
				resp.Headers, resp.Body = string(out[:i]), out[i+4:]
			} else {
				resp.Body = out
			}
			return resp, nil
		}
	}
}
