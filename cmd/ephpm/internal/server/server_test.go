package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/barrier"
	"github.com/ephpm/ephpm/shm"
)

// openStore makes a segment of its own for t.
func openStore(t *testing.T) *shm.Store {
	t.Helper()
	st, err := shm.Open("resp", shm.Options{Dir: t.TempDir(), Memory: contract.MemoryConfig{Limit: 4 << 20}})
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, st.Check())
		st.Close()
	})
	return st
}

// countingListener counts the writes of the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.writes}, nil
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// start serves st with password on a free loopback port; writes counts
// the server's writes.
func start(t *testing.T, st Store, password string) (addr string, writes *atomic.Int64) {
	t.Helper()
	return startWith(t, Config{Store: st, Password: password})
}

// startWith is start with every setting of cfg.
func startWith(t *testing.T, cfg Config) (addr string, writes *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	writes = new(atomic.Int64)
	cfg.Describe, cfg.Logf = "test segment", t.Logf
	s := New(cfg)
	done := make(chan error, 1)
	go func() { done <- s.Serve(countingListener{l, writes}) }()
	t.Cleanup(func() {
		s.Close()
		assert.ErrorIs(t, <-done, ErrClosed)
	})
	return l.Addr().String(), writes
}

// client speaks RESP to the server; each reply is rendered as a string:
// +S, -E, :N, $bulk (or $nil), _ (RESP3 null), [a b ...] for arrays, {k v ...} for maps,
// =txt:... for verbatim strings.
type client struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(2 * time.Minute)) // a hang catch, not a speed bound
	return &client{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func encode(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

func (c *client) send(args ...string) {
	c.t.Helper()
	_, err := c.nc.Write(encode(args...))
	require.NoError(c.t, err)
}

func (c *client) do(args ...string) string {
	c.t.Helper()
	c.send(args...)
	return c.reply()
}

func (c *client) reply() string {
	c.t.Helper()
	line, err := c.r.ReadString('\n')
	require.NoError(c.t, err)
	require.True(c.t, strings.HasSuffix(line, "\r\n"), "%q", line)
	line = line[:len(line)-2]
	switch line[0] {
	case '+', '-', ':', '_':
		return line
	case '$', '=':
		n, err := strconv.Atoi(line[1:])
		require.NoError(c.t, err)
		if n < 0 {
			return "$nil"
		}
		b := make([]byte, n+2)
		_, err = io.ReadFull(c.r, b)
		require.NoError(c.t, err)
		return line[:1] + string(b[:n])
	case '*', '%':
		n, err := strconv.Atoi(line[1:])
		require.NoError(c.t, err)
		if line[0] == '%' {
			n *= 2
		}
		parts := make([]string, n)
		for i := range parts {
			parts[i] = c.reply()
		}
		open, end := "[", "]"
		if line[0] == '%' {
			open, end = "{", "}"
		}
		return open + strings.Join(parts, " ") + end
	}
	c.t.Fatalf("unexpected reply %q", line)
	return ""
}

func TestCommandsAnswerAsRedisDoes(t *testing.T) {
	st := openStore(t)
	addr, _ := start(t, st, "")
	c := dial(t, addr)
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "+PONG"},
		{[]string{"ping", "hi"}, "$hi"},
		{[]string{"GET", "k"}, "$nil"},
		{[]string{"SET", "k", "v"}, "+OK"},
		{[]string{"get", "k"}, "$v"},
		{[]string{"SET", "k", "w", "GET"}, "$v"},
		{[]string{"SET", "new", "w", "GET"}, "$nil"},
		{[]string{"SET", "k", "x", "NX"}, "$nil"},
		{[]string{"SET", "lock", "t1", "NX", "PX", "60000"}, "+OK"},
		{[]string{"SET", "lock", "t2", "NX", "GET"}, "$t1"},
		{[]string{"SETNX", "lock", "t3"}, ":0"},
		{[]string{"SETNX", "lock2", "t3"}, ":1"},
		{[]string{"SET", "k", "y", "IFEQ", "nope"}, "$nil"},
		{[]string{"SET", "k", "y", "IFEQ", "w"}, "+OK"},
		{[]string{"SET", "k", "z", "IFEQ", "y", "GET"}, "$y"},
		{[]string{"SET", "k", "q", "IFEQ", "y", "GET"}, "$z"},
		{[]string{"GET", "k"}, "$z"},
		{[]string{"SET", "missing", "v", "IFEQ", "x"}, "$nil"},
		{[]string{"EXISTS", "missing"}, ":0"},
		{[]string{"SET", "k", "v", "NX", "IFEQ", "x"}, "-ERR syntax error"},
		{[]string{"SET", "k", "v", "EX", "0"}, "-ERR invalid expire time in 'set' command"},
		{[]string{"SET", "k", "v", "EX", "x"}, "-ERR value is not an integer or out of range"},
		{[]string{"SET", "k", "v", "PX", "10", "EX", "10"}, "-ERR syntax error"},
		{[]string{"SET", "k", "v", "BOGUS"}, "-ERR syntax error"},
		{[]string{"SET", "k"}, "-ERR wrong number of arguments for 'set' command"},
		{[]string{"DELIFEQ", "lock", "t2"}, ":0"},
		{[]string{"DELIFEQ", "lock", "t1"}, ":1"},
		{[]string{"EXISTS", "lock", "lock2", "k", "nope"}, ":2"},
		{[]string{"DEL", "lock2", "k", "nope"}, ":2"},
		{[]string{"TTL", "nope"}, ":-2"},
		{[]string{"SET", "t", "v"}, "+OK"},
		{[]string{"TTL", "t"}, ":-1"},
		{[]string{"EXPIRE", "t", "100"}, ":1"},
		{[]string{"PEXPIRE", "t", "5000"}, ":1"},
		{[]string{"EXPIRE", "nope", "100"}, ":0"},
		{[]string{"EXPIRE", "t", "10", "NX"}, "-ERR Unsupported option NX"},
		{[]string{"EXPIRE", "t", "0"}, ":1"},
		{[]string{"EXISTS", "t"}, ":0"},
		{[]string{"INCR", "n"}, ":1"},
		{[]string{"INCRBY", "n", "41"}, ":42"},
		{[]string{"DECR", "n"}, ":41"},
		{[]string{"DECRBY", "n", "40"}, ":1"},
		{[]string{"INCRBY", "n", "x"}, "-ERR value is not an integer or out of range"},
		{[]string{"SET", "s", "abc"}, "+OK"},
		{[]string{"INCR", "s"}, "-ERR value is not an integer or out of range"},
		{[]string{"SET", "big", "9223372036854775807"}, "+OK"},
		{[]string{"INCR", "big"}, "-ERR increment or decrement would overflow"},
		{[]string{"DECRBY", "n", "-9223372036854775808"}, "-ERR decrement would overflow"},
		{[]string{"MSET", "a", "1", "b", "2"}, "+OK"},
		{[]string{"MSET", "a", "1", "b"}, "-ERR wrong number of arguments for 'mset' command"},
		{[]string{"MGET", "a", "nope", "b"}, "[$1 $nil $2]"},
		{[]string{"FOO", "a", "b"}, "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' "},
		{[]string{"CLIENT", "SETNAME", "a b"}, "-ERR Client names cannot contain spaces, newlines or special characters."},
		{[]string{"CLIENT", "SETNAME", "tester"}, "+OK"},
		{[]string{"CLIENT", "GETNAME"}, "$tester"},
		{[]string{"CLIENT", "KILL"}, "-ERR unknown subcommand 'KILL'. Try CLIENT HELP."},
		{[]string{"AUTH", "x"}, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"},
		{[]string{"SELECT", "0"}, "+OK"},
		{[]string{"SELECT", "1"}, "-ERR DB index is out of range"},
		{[]string{"HELLO", "4"}, "-NOPROTO unsupported protocol version"},
		{[]string{"SCAN", "x"}, "-ERR invalid cursor"},
		{[]string{"SCAN", "0", "COUNT", "0"}, "-ERR syntax error"},
		{[]string{"SET", "", "v"}, "-ERR kv: invalid argument: key length 0 is outside 1..4096"},
	} {
		assert.Equal(t, step.want, c.do(step.args...), "%q", step.args)
	}
	info := c.do("INFO")
	assert.Contains(t, info, "# Keyspace\r\ndb0:keys=")
	assert.Contains(t, info, "store:test segment")
	assert.NotContains(t, c.do("INFO", "stats"), "# Server")
	assert.Equal(t, "+OK", c.do("QUIT"))
	_, err := c.r.ReadByte()
	assert.Equal(t, io.EOF, err, "QUIT closes the connection")
}

// TTL is the time left cut to whole seconds, never rounded up (Redis
// rounds to the nearest), as PTTL is cut to the millisecond and the ephpm
// command shows it: a lock never looks longer-lived than it is.
func TestTTLIsCutNeverRoundedUp(t *testing.T) {
	c := dial(t, func() string { a, _ := start(t, openStore(t), ""); return a }())
	assert.Equal(t, "+OK", c.do("SET", "lock", "t", "PX", "1999"))
	assert.Equal(t, ":1", c.do("TTL", "lock"), "1.99 s left: 1, where Redis says 2")
	ms, err := strconv.Atoi(strings.TrimPrefix(c.do("PTTL", "lock"), ":"))
	require.NoError(t, err)
	assert.True(t, ms > 0 && ms <= 1999, "%d ms", ms)
	assert.Equal(t, "+OK", c.do("SET", "lock", "t", "PX", "999"))
	assert.Equal(t, ":0", c.do("TTL", "lock"), "under a second left: 0, the key still there")
	assert.Equal(t, ":1", c.do("EXISTS", "lock"))
	assert.Equal(t, ":1", c.do("EXPIRE", "lock", "100"))
	assert.Contains(t, []string{":99", ":100"}, c.do("TTL", "lock"))
}

func TestRESP3AfterHello(t *testing.T) {
	addr, _ := start(t, openStore(t), "")
	c := dial(t, addr)
	assert.Equal(t, "$nil", c.do("GET", "k"))
	hello := c.do("HELLO", "3", "SETNAME", "me")
	assert.True(t, strings.HasPrefix(hello, "{$server $ephpm $version $7.0.0 $proto :3 $id :"), hello)
	assert.Equal(t, "_", c.do("GET", "k"), "RESP3's null")
	assert.Equal(t, "$me", c.do("CLIENT", "GETNAME"))
	assert.True(t, strings.HasPrefix(c.do("INFO", "server"), "=txt:# Server"))
	assert.Equal(t, "{}", c.do("CONFIG", "GET", "save"))
	c.do("HELLO", "2")
	assert.Equal(t, "$nil", c.do("GET", "k"))
}

func TestAuthGuardsEveryCommandButAuthHelloQuit(t *testing.T) {
	st := openStore(t)
	addr, _ := start(t, st, "s3cret")
	c := dial(t, addr)
	for _, args := range [][]string{{"GET", "k"}, {"SET", "k", "v"}, {"PING"}, {"SCAN", "0"}, {"INFO"}, {"FOO"}} {
		want := "-NOAUTH Authentication required."
		if args[0] == "FOO" {
			want = "-ERR unknown command 'FOO', with args beginning with: "
		}
		assert.Equal(t, want, c.do(args...), "%q", args)
	}
	_, found, err := st.GetInto("k", nil)
	require.NoError(t, err)
	assert.False(t, found, "nothing was set before AUTH")
	assert.True(t, strings.HasPrefix(c.do("HELLO", "3"), "-NOAUTH HELLO must be called with the client already authenticated"))
	assert.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.", c.do("AUTH", "nope"))
	assert.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.", c.do("AUTH", "other", "s3cret"))
	assert.Equal(t, "-NOAUTH Authentication required.", c.do("GET", "k"))
	assert.Equal(t, "+OK", c.do("AUTH", "s3cret"))
	assert.Equal(t, "+PONG", c.do("PING"))

	d := dial(t, addr)
	assert.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.", d.do("HELLO", "3", "AUTH", "default", "bad"))
	assert.True(t, strings.HasPrefix(d.do("HELLO", "3", "AUTH", "default", "s3cret"), "{$server $ephpm"))
	assert.Equal(t, "+OK", d.do("SET", "k", "v"))
	assert.Equal(t, "+OK", dial(t, addr).do("QUIT"), "QUIT before AUTH")
}

// Before AUTH, Redis's limits (CVE-2021-32675) and texts: at most 10
// arguments of at most 16 KiB, refused at the header and the connection
// closed, so that a client without the password makes the server hold
// little; after AUTH, the usual limits.
func TestBeforeAuthACommandIsLimitedAsRedisLimitsIt(t *testing.T) {
	addr, _ := start(t, openStore(t), "s3cret")
	for _, tc := range []struct {
		stream []byte
		want   string
	}{
		{[]byte("*11\r\n"), "-ERR Protocol error: unauthenticated multibulk length"},
		{[]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$16385\r\n"), "-ERR Protocol error: unauthenticated bulk length"},
		{[]byte("*2\r\n$4\r\nAUTH\r\n$268435456\r\n"), "-ERR Protocol error: unauthenticated bulk length"},
	} {
		c := dial(t, addr)
		_, err := c.nc.Write(tc.stream)
		require.NoError(t, err)
		assert.Equal(t, tc.want, c.reply(), "%q", tc.stream)
		_, err = c.r.ReadByte()
		assert.Equal(t, io.EOF, err, "closed after the error")
	}
	c := dial(t, addr)
	assert.Equal(t, "-NOAUTH Authentication required.", c.do("SET", "k", strings.Repeat("v", 16384)), "16 KiB is taken")
	assert.Equal(t, "+OK", c.do("AUTH", "s3cret"))
	assert.Equal(t, "+OK", c.do("SET", "k", strings.Repeat("v", 100000)))
	assert.Equal(t, "+OK", c.do("MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6"))
	d := dial(t, addr)
	assert.True(t, strings.HasPrefix(d.do("HELLO", "2", "AUTH", "default", "s3cret"), "[$server $ephpm"))
	assert.Equal(t, "+OK", d.do("SET", "k", strings.Repeat("w", 100000)), "HELLO's AUTH lifts the limits too")
}

// One connection beyond MaxClients is told so in Redis's words and
// closed; once one of them ends, a new one is served.
func TestMaxClientsRefusesOneMoreWithRedisText(t *testing.T) {
	addr, _ := startWith(t, Config{Store: openStore(t), MaxClients: 2})
	a, b := dial(t, addr), dial(t, addr)
	assert.Equal(t, "+PONG", a.do("PING"))
	assert.Equal(t, "+PONG", b.do("PING"))
	c := dial(t, addr)
	assert.Equal(t, "-ERR max number of clients reached", c.reply())
	_, err := c.r.ReadByte()
	assert.Equal(t, io.EOF, err)
	assert.Contains(t, a.do("INFO", "stats"), "rejected_connections:1")
	a.nc.Close()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		d := dial(t, addr)
		if r := d.do("PING"); r == "+PONG" {
			break
		}
		require.True(t, time.Now().Before(deadline), "a place was freed")
	}
	assert.Equal(t, 10000, New(Config{}).cfg.MaxClients, "Redis's default")
}

// IdleTimeout closes a connection idle that long, and only an idle one.
// The busy one is asserted open if no gap between its commands reached
// the timeout (a host that stalls this test that long may let it lapse).
func TestIdleTimeoutClosesAnIdleConnection(t *testing.T) {
	const timeout = time.Second
	addr, _ := startWith(t, Config{Store: openStore(t), IdleTimeout: timeout})
	idle, busy := dial(t, addr), dial(t, addr)
	assert.Equal(t, "+PONG", idle.do("PING"))
	var gap time.Duration // the longest between the starts of two of busy's commands
	last := time.Now()
	for i := 0; i < 12; i++ { // 1.2 s of a command every 100 ms
		gap, last = max(gap, time.Since(last)), time.Now()
		assert.Equal(t, "+PONG", busy.do("PING"))
		time.Sleep(100 * time.Millisecond)
	}
	_, err := idle.r.ReadByte()
	assert.Equal(t, io.EOF, err, "the idle one was closed")
	gap = max(gap, time.Since(last))
	if gap < timeout {
		assert.Equal(t, "+PONG", busy.do("PING"), "the busy one was not")
	}
}

// A pipeline is read whole and answered in order, in far fewer writes
// than it has commands.
func TestPipelineIsAnsweredInOrderInFewWrites(t *testing.T) {
	addr, writes := start(t, openStore(t), "")
	c := dial(t, addr)
	const n = 2000
	var batch []byte
	for i := 0; i < n; i++ {
		batch = append(batch, encode("SET", "k"+strconv.Itoa(i), strconv.Itoa(i))...)
		batch = append(batch, encode("GET", "k"+strconv.Itoa(i))...)
	}
	before := writes.Load()
	go c.nc.Write(batch)
	for i := 0; i < n; i++ {
		require.Equal(t, "+OK", c.reply())
		require.Equal(t, "$"+strconv.Itoa(i), c.reply())
	}
	got := writes.Load() - before
	assert.Less(t, got, int64(n/10), "%d commands answered in %d writes", 2*n, got)
	t.Logf("%d commands answered in %d writes", 2*n, got)
}

func TestMalformedInputGetsRedisProtocolErrorAndClose(t *testing.T) {
	addr, _ := start(t, openStore(t), "")
	c := dial(t, addr)
	c.nc.Write([]byte("*1\r\n$4\r\nPING\r\n*1\r\nfoo\r\n"))
	assert.Equal(t, "+PONG", c.reply())
	assert.Equal(t, "-ERR Protocol error: expected '$', got 'f'", c.reply())
	_, err := c.r.ReadByte()
	assert.Equal(t, io.EOF, err)
	d := dial(t, addr)
	d.nc.Write([]byte("set k \"v v\"\r\nget k\r\n"))
	assert.Equal(t, "+OK", d.reply())
	assert.Equal(t, "$v v", d.reply(), "inline commands, as telnet sends them")
}

func TestScanWalksWithMatchAndCount(t *testing.T) {
	st := openStore(t)
	addr, _ := start(t, st, "")
	c := dial(t, addr)
	want := map[string]bool{}
	for i := 0; i < 500; i++ {
		k := fmt.Sprintf("user:%d", i)
		require.NoError(t, st.Set(k, []byte("v"), 0))
		want[k] = true
		require.NoError(t, st.Set(fmt.Sprintf("other:%d", i), []byte("v"), 0))
	}
	got := map[string]bool{}
	cursor := "0"
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100000)
		c.send("SCAN", cursor, "MATCH", "user:*", "COUNT", "25")
		r := c.reply()
		require.True(t, strings.HasPrefix(r, "[$"), r)
		parts := strings.SplitN(strings.TrimSuffix(strings.TrimPrefix(r, "[$"), "]"), " ", 2)
		cursor = parts[0]
		for _, k := range strings.Fields(strings.Trim(parts[1], "[]")) {
			require.True(t, strings.HasPrefix(k, "$user:"), k)
			got[strings.TrimPrefix(k, "$")] = true
		}
		if cursor == "0" {
			break
		}
	}
	assert.Equal(t, want, got)
	assert.True(t, strings.HasSuffix(c.do("SCAN", "0", "TYPE", "list", "COUNT", "100000"), " []]"), "no key is a list")
}

// failing is a segment whose walk skips a damaged shard (skip), or fails
// (scanErr), and on which key "bad" fails: every call on it (badShard),
// or only its deletion and read (badStep: damage met in the step).
type failing struct {
	*shm.Store
	skip              string
	scanErr           error
	badShard, badStep bool
}

var errDamaged = errors.New("shm: segment shard is corrupt: shard 3 of /dev/shm/x")

func (f failing) Del(k string) (bool, error) {
	if k == "bad" && (f.badShard || f.badStep) {
		return false, errDamaged
	}
	return f.Store.Del(k)
}

func (f failing) Exists(k string) (bool, error) {
	if k == "bad" && f.badShard {
		return false, errDamaged
	}
	return f.Store.Exists(k)
}

func (f failing) GetInto(k string, dst []byte) (int, bool, error) {
	if k == "bad" && (f.badShard || f.badStep) {
		return 0, false, errDamaged
	}
	return f.Store.GetInto(k, dst)
}

func (f failing) Scan(prefix string, c uint64, n int, locks bool) (backend.ScanPage, error) {
	if f.scanErr != nil {
		return backend.ScanPage{}, f.scanErr
	}
	p, err := f.Store.Scan(prefix, c, n, locks)
	if f.skip != "" {
		p.Skipped = append(p.Skipped, f.skip)
	}
	return p, err
}

// A SCAN page that skipped a damaged shard is an error naming it (and the
// cursor to go on from), never a page a client takes for all the keys; a
// walk that failed is an error too.
func TestScanAnswersAnErrorForASkippedShardOrAFailedWalk(t *testing.T) {
	st := openStore(t)
	require.NoError(t, st.Set("a", []byte("1"), 0))
	addr, _ := start(t, failing{Store: st, skip: "shm: segment shard is corrupt: shard 3 of /dev/shm/x"}, "")
	c := dial(t, addr)
	assert.Regexp(t, `^-ERR SCAN could not read part of the store: shm: segment shard is corrupt: shard 3 of /dev/shm/x \(the walk goes on from cursor \d+ without it\)$`,
		c.do("SCAN", "0", "COUNT", "1000"))
	addr, _ = start(t, failing{Store: st, scanErr: errors.New("shm: segment removed")}, "")
	assert.Equal(t, "-ERR shm: segment removed", dial(t, addr).do("SCAN", "0"))
}

// DEL of several keys decides what a failing shard decides before it
// deletes anything; what only a deletion meets ends it with the error
// naming the keys it had deleted. MGET answers one error, never an array
// with an error among its values.
func TestMultiKeyCommandsAnswerOneErrorAndSayWhatTheyDid(t *testing.T) {
	st := openStore(t)
	set := func(keys ...string) {
		for _, k := range keys {
			require.NoError(t, st.Set(k, []byte("v"+k), 0))
		}
	}
	set("a", "b")
	addr, _ := start(t, failing{Store: st, badShard: true}, "")
	c := dial(t, addr)
	assert.Equal(t, "-ERR DEL deleted nothing: key 'bad': "+errDamaged.Error(), c.do("DEL", "a", "bad", "b"))
	ok, err := st.Exists("a")
	require.NoError(t, err)
	assert.True(t, ok, "a shard every call fails on fails DEL before it deletes anything")
	assert.Equal(t, "-ERR MGET could not read key 'bad': "+errDamaged.Error(), c.do("MGET", "a", "bad", "b"))
	assert.Equal(t, "[$va $nil $vb]", c.do("MGET", "a", "nope", "b"))
	assert.Equal(t, "-ERR "+errDamaged.Error(), c.do("EXISTS", "a", "bad"))

	addr, _ = start(t, failing{Store: st, badStep: true}, "")
	c = dial(t, addr)
	assert.Equal(t, "-ERR DEL failed at key 'bad' having deleted 1 of the 2 keys before it ('a'): "+errDamaged.Error(),
		c.do("DEL", "a", "nope", "bad", "b"))
	ok, err = st.Exists("b")
	require.NoError(t, err)
	assert.True(t, ok, "DEL stopped at the failure")
	assert.Equal(t, ":1", c.do("DEL", "b", "nope"))
	assert.Equal(t, "-ERR "+errDamaged.Error(), c.do("DEL", "bad"))

	// MSET sets each key on its own: a failure after some says which.
	r := c.do("MSET", "m1", "1", "m2", "2", "huge", strings.Repeat("x", 3<<20), "m3", "3")
	assert.True(t, strings.HasPrefix(r, "-OOM command not allowed when used memory > 'maxmemory': MSET set 2 of its 4 keys ('m1' 'm2'), then failed: key \"huge\""), r)
	assert.Equal(t, "[$1 $2 $nil]", c.do("MGET", "m1", "m2", "m3"))
}

func TestMatchIsRedisGlob(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"user:*", "user:1", true}, {"user:*", "usr:1", false},
		{"h?llo", "hello", true}, {"h?llo", "hllo", false}, {"h[ae]llo", "hallo", true},
		{"h[^e]llo", "hello", false}, {"h[^e]llo", "hallo", true}, {"h[a-b]llo", "hbllo", true},
		{"h[a-b]llo", "hcllo", false}, {"a\\*b", "a*b", true}, {"a\\*b", "axb", false},
		{"*a*a*a*a*a*a*a*b", strings.Repeat("a", 60), false}, {"**x", "abx", true},
	} {
		assert.Equal(t, c.want, Match([]byte(c.p), []byte(c.s)), "%q %q", c.p, c.s)
	}
}

// SETNX from many connections and SetNX in this process, released
// together, take one lock once per round: the same step.
func TestSetNXOverTheWireAndInProcessHaveOneWinner(t *testing.T) {
	st := openStore(t)
	addr, _ := start(t, st, "")
	const n = 8
	clients := make([]*client, n)
	for i := range clients {
		clients[i] = dial(t, addr)
	}
	var mu sync.Mutex
	for round := 0; round < 100; round++ {
		key := "lock:" + strconv.Itoa(round)
		wins := barrier.Race(2*n, func(i int) bool {
			if i < n {
				mu.Lock() // t's helpers are not for concurrent use on one client, only the wire is
				c := clients[i]
				mu.Unlock()
				_, err := c.nc.Write(encode("SETNX", key, "wire"))
				if err != nil {
					return false
				}
				line, _ := c.r.ReadString('\n')
				return line == ":1\r\n"
			}
			out, err := st.SetNX(key, []byte("here"), time.Minute)
			return err == nil && out == contract.Inserted
		})
		require.Equal(t, 1, wins, "round %d", round)
	}
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }
