package resp

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// encode is a command as clients send it.
func encode(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

func strs(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

func TestParseTakesWholeCommandsOnly(t *testing.T) {
	cmd := encode("SET", "key", "va\r\nlue", "")
	for cut := 0; cut < len(cmd); cut++ {
		args, n, err := Parse(cmd[:cut], nil)
		require.NoError(t, err, "cut at %d", cut)
		require.Zero(t, n, "a command cut at %d is not whole", cut)
		require.Empty(t, args)
	}
	two := append(append([]byte{}, cmd...), encode("GET", "key")...)
	args, n, err := Parse(two, nil)
	require.NoError(t, err)
	assert.Equal(t, len(cmd), n)
	assert.Equal(t, []string{"SET", "key", "va\r\nlue", ""}, strs(args))
	args, m, err := Parse(two[n:], args)
	require.NoError(t, err)
	assert.Equal(t, len(two)-n, m)
	assert.Equal(t, []string{"GET", "key"}, strs(args))
}

func TestParseInline(t *testing.T) {
	for in, want := range map[string][]string{
		"PING\r\n":                          {"PING"},
		"set  k \"a b\\x41\\n\" 'it\\'s'\n": {"set", "k", "a bA\n", "it's"},
		"get \"\"\r\n":                      {"get", ""},
		"\r\n":                              {},
	} {
		args, n, err := Parse([]byte(in), nil)
		require.NoError(t, err, in)
		assert.Equal(t, len(in), n, in)
		assert.Equal(t, want, strs(args), in)
	}
	_, _, err := Parse([]byte("set \"k\n"), nil)
	assert.EqualError(t, err, "Protocol error: unbalanced quotes in request")
}

func TestParseRefusesMalformedCommandsWithRedisText(t *testing.T) {
	for in, want := range map[string]string{
		"*x\r\n":                  "Protocol error: invalid multibulk length",
		"*1\r\n$x\r\n":            "Protocol error: invalid bulk length",
		"*1\r\n$-1\r\n":           "Protocol error: invalid bulk length",
		"*1\r\nfoo\r\n":           "Protocol error: expected '$', got 'f'",
		"*1\r\n$3\r\nfooX\r\n":    "Protocol error: invalid bulk length",
		"*99999999999\r\n":        "Protocol error: invalid multibulk length",
		"*1\r\n$999999999999\r\n": "Protocol error: invalid bulk length",
		"*1" + string(bytes.Repeat([]byte("1"), 40)): "Protocol error: invalid multibulk length",
	} {
		_, _, err := Parse([]byte(in), nil)
		var pe ProtocolError
		require.True(t, errors.As(err, &pe), "%q: %v", in, err)
		assert.EqualError(t, err, want, "%q", in)
	}
}

// The reader assembles commands whatever the reads' sizes, skips empty
// ones, and calls BeforeRead only when it has no whole command.
func TestReaderAcrossReadsAndBeforeRead(t *testing.T) {
	var stream []byte
	var want [][]string
	big := string(bytes.Repeat([]byte("v"), 100<<10)) // grows the buffer
	for i := 0; i < 50; i++ {
		args := []string{"SET", "k" + strconv.Itoa(i), strconv.Itoa(i)}
		if i == 25 {
			args[2] = big
			stream = append(stream, "\r\n"...) // an empty inline command
		}
		stream = append(stream, encode(args...)...)
		want = append(want, args)
	}
	for _, src := range []io.Reader{bytes.NewReader(stream), iotest.OneByteReader(bytes.NewReader(stream)), iotest.HalfReader(bytes.NewReader(stream))} {
		r := NewReader(src)
		reads := 0
		r.BeforeRead = func() error { reads++; return nil }
		for i := range want {
			args, err := r.Next()
			require.NoError(t, err)
			require.Equal(t, want[i], strs(args))
		}
		_, err := r.Next()
		assert.Equal(t, io.EOF, err)
		assert.Greater(t, reads, 0)
	}
	r := NewReader(bytes.NewReader(encode("GET", "k")[:7]))
	_, err := r.Next()
	assert.Equal(t, io.ErrUnexpectedEOF, err, "the connection ended inside a command")
}

// chunked hands out its data at most n bytes a Read, as a slow sender's
// packets arrive.
type chunked struct {
	data []byte
	n    func() int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(c.n(), len(p), len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

func fixed(n int) func() int { return func() int { return n } }

// A command that arrives in many reads is parsed as it arrives, not again
// from its start at every read: taking one of many arguments in 512-byte
// reads costs about what taking it in one read does (it cost the square
// of its length: docs/measurements.md, "Figures moved out of code
// comments").
func TestReaderParsesACommandInManyReadsOnlyOnce(t *testing.T) {
	const args = 100000
	var b bytes.Buffer
	b.WriteString("*" + strconv.Itoa(args) + "\r\n")
	for i := 0; i < args; i++ {
		b.WriteString("$1\r\nx\r\n")
	}
	took := func(n func() int) time.Duration {
		best := time.Duration(1 << 62)
		for try := 0; try < 3; try++ {
			r := NewReader(&chunked{data: b.Bytes(), n: n})
			start := time.Now()
			a, err := r.Next()
			best = min(best, time.Since(start))
			require.NoError(t, err)
			require.Len(t, a, args)
		}
		return best
	}
	whole, slow := took(fixed(1<<30)), took(fixed(512))
	t.Logf("%d arguments (%d bytes): %v in one read, %v in 512-byte reads", args, b.Len(), whole, slow)
	assert.Less(t, slow, 50*whole+50*time.Millisecond, "parsed again at every read")
}

// Before AUTH a reader holds Redis's limits: a command of more than 10
// arguments, or an argument of more than 16 KiB, is refused with Redis's
// text as soon as its header says so, before its bytes are read: a
// client that has not authenticated makes the server hold little.
func TestReaderBeforeAuthRefusesLargeCommandsAtTheirHeader(t *testing.T) {
	refuse := func(stream []byte, want string) *Reader {
		t.Helper()
		r := NewReader(&chunked{data: stream, n: fixed(1 << 20)})
		r.Limits = Unauthenticated
		_, err := r.Next()
		var pe ProtocolError
		require.True(t, errors.As(err, &pe), "%v", err)
		assert.EqualError(t, err, want)
		return r
	}
	refuse(encode(make([]string, 11)...), "Protocol error: unauthenticated multibulk length")
	refuse([]byte("*x\r\n"), "Protocol error: invalid multibulk length")
	big := append([]byte("*2\r\n$3\r\nGET\r\n$"+strconv.Itoa(64<<20)+"\r\n"), make([]byte, 64<<20)...)
	r := refuse(big, "Protocol error: unauthenticated bulk length")
	assert.LessOrEqual(t, len(r.buf), 16<<10, "nothing beyond the first read was held")
	refuse(encode("SET", "k", string(make([]byte, 16<<10+1))), "Protocol error: unauthenticated bulk length")

	ok := encode(append([]string{"SET", "k", string(make([]byte, 16<<10))}, make([]string, 7)...)...)
	r = NewReader(&chunked{data: ok, n: fixed(1000)})
	r.Limits = Unauthenticated
	a, err := r.Next()
	require.NoError(t, err)
	assert.Len(t, a, 10, "10 arguments of 16 KiB are taken")
	r = NewReader(&chunked{data: big[:len(big)-1], n: fixed(1 << 20)}) // authenticated: read to the end
	_, err = r.Next()
	assert.Equal(t, io.ErrUnexpectedEOF, err)
}

// Whatever the reads' sizes, the reader takes the commands Parse takes
// from the whole stream, inline ones too.
func TestReaderTakesWhatParseTakesWhateverTheReads(t *testing.T) {
	var stream []byte
	var want [][]string
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		if i%7 == 3 {
			stream = append(stream, "set k \"a b\" 'c'\r\n"...)
			want = append(want, []string{"set", "k", "a b", "c"})
			continue
		}
		args := []string{"SET", strconv.Itoa(i), string(bytes.Repeat([]byte("v"), rnd.IntN(3000)))}
		stream = append(stream, encode(args...)...)
		want = append(want, args)
	}
	for _, n := range []func() int{fixed(1), fixed(7), fixed(512), func() int { return 1 + rnd.IntN(5000) }} {
		r := NewReader(&chunked{data: stream, n: n})
		for i := range want {
			args, err := r.Next()
			require.NoError(t, err)
			require.Equal(t, want[i], strs(args), "command %d", i)
		}
		_, err := r.Next()
		require.Equal(t, io.EOF, err)
	}
}

func TestWriterRESP2AndRESP3(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.OK()
	w.Int(-3)
	w.Bulk([]byte("a\r\nb"))
	w.Null()
	w.Array(1)
	w.Map(1)
	w.BulkString("k")
	w.Simple("x\r\ny")
	w.Error("ERR bad")
	w.Verbatim("# S\r\n")
	require.NoError(t, w.Flush())
	assert.Equal(t, "+OK\r\n:-3\r\n$4\r\na\r\nb\r\n$-1\r\n*1\r\n*2\r\n$1\r\nk\r\n+x  y\r\n-ERR bad\r\n$5\r\n# S\r\n\r\n", out.String())
	out.Reset()
	w.RESP = 3
	w.Null()
	w.Map(2)
	w.Verbatim("ab")
	require.NoError(t, w.Flush())
	assert.Equal(t, "_\r\n%2\r\n=6\r\ntxt:ab\r\n", out.String())
	assert.Zero(t, w.Buffered())
}

// FuzzParse: no input makes Parse panic or take more than it was given,
// and what it takes, parsed again, is the same command; a command
// encoded from what it parsed parses to the same arguments.
func FuzzParse(f *testing.F) {
	f.Add(encode("SET", "k", "v", "PX", "100"))
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n"))
	f.Add([]byte("set \"a\\x4\" 'b\n"))
	f.Add([]byte("*-1\r\n*0\r\n$0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		for rest := in; len(rest) > 0; {
			args, n, err := Parse(rest, nil)
			if err != nil || n == 0 {
				return
			}
			if n > len(rest) {
				t.Fatalf("took %d of %d bytes", n, len(rest))
			}
			if rest[0] == '*' {
				again, m, err := Parse(rest[:n], nil)
				if err != nil || m != n || len(again) != len(args) {
					t.Fatalf("the %d bytes taken parse again to %q (%d, %v), not %q", n, again, m, err, args)
				}
			}
			re := make([]string, len(args))
			for i, a := range args {
				re[i] = string(a)
			}
			if len(re) > 0 {
				back, _, err := Parse(encode(re...), nil)
				if err != nil || len(back) != len(re) {
					t.Fatalf("re-encoded %q parsed to %q, %v", re, back, err)
				}
				for i := range back {
					if string(back[i]) != re[i] {
						t.Fatalf("argument %d: %q, not %q", i, back[i], re[i])
					}
				}
			}
			rest = rest[n:]
		}
	})
}
