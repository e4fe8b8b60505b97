package redisstore

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trickle is a connection whose reads return one byte at a time, so that
// every reply is decoded across as many reads as it has bytes.
type trickle struct {
	net.Conn
	r io.Reader
}

func (t trickle) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return t.r.Read(p)
}

func TestReadReply(t *testing.T) {
	long := strings.Repeat("x", 3*wireBufSize)
	for _, tc := range []struct {
		wire string
		dst  int
		want reply
		err  string
	}{
		{wire: "+OK\r\n", want: reply{kind: '+'}},
		{wire: ":-42\r\n", want: reply{kind: ':', n: -42}},
		{wire: "$-1\r\n", want: reply{kind: '$', null: true}},
		{wire: "$0\r\n\r\n", want: reply{kind: '$', b: []byte{}}},
		{wire: "$5\r\nhe\r\nl\r\n", dst: 8, want: reply{kind: '$', b: []byte("he\r\nl")}},
		{wire: "$5\r\nhello\r\n", dst: 2, want: reply{kind: '$', b: []byte("hello")}},
		{wire: fmt.Sprintf("$%d\r\n%s\r\n", len(long), long), want: reply{kind: '$', b: []byte(long)}},
		{wire: "-NOSCRIPT No matching script\r\n", err: "NOSCRIPT No matching script"},
		{wire: "*1\r\n:1\r\n", err: errProtocol.Error()},
		{wire: "$5\r\nhelloXY", err: errProtocol.Error()},
		{wire: ":x\r\n", err: errProtocol.Error()},
		{wire: "$-2\r\n", err: errProtocol.Error()},
		{wire: "\r\n", err: errProtocol.Error()},
		{wire: "$5\r\nhel", err: io.ErrUnexpectedEOF.Error()},
		{wire: "+OK", err: io.EOF.Error()},
	} {
		c := newWireConn(trickle{r: strings.NewReader(tc.wire)}, nil)
		dst := make([]byte, tc.dst)
		got, err := c.readReply(dst)
		if tc.err != "" {
			assert.EqualError(t, err, tc.err, "%q", tc.wire)
			continue
		}
		require.NoError(t, err, "%q", tc.wire)
		assert.Equal(t, tc.want, got, "%q", tc.wire)
		if len(got.b) > 0 && len(got.b) <= tc.dst {
			assert.Same(t, &dst[0], &got.b[0], "a bulk string that fits goes into dst")
		}
	}
}

// A server's error reply is a redisError, which the pool keeps the
// connection for; the connection is then in step for the next reply.
func TestReadReplyAfterAnError(t *testing.T) {
	c := newWireConn(trickle{r: strings.NewReader("-ERR no\r\n:7\r\n")}, nil)
	_, err := c.readReply(nil)
	var refused redisError
	require.True(t, errors.As(err, &refused))
	r, err := c.readReply(nil)
	require.NoError(t, err)
	assert.Equal(t, int64(7), r.n)
}

func TestAppendCommand(t *testing.T) {
	got := appendCommand(nil, []any{"set", []byte("k\r\n"), int64(-5)})
	assert.Equal(t, "*3\r\n$3\r\nset\r\n$3\r\nk\r\n\r\n$2\r\n-5\r\n", string(got))
	assert.Panics(t, func() { appendCommand(nil, []any{3}) }, "an int is not an argument: int64 is")
}
