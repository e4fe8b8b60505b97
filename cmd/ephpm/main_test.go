package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/redisstore"
	"github.com/ephpm/ephpm/sessionkeys"
	"github.com/ephpm/ephpm/shm"
)

// segment makes the segment "pool" of dir for a test, as a server would.
func segment(t *testing.T) (dir string, s *shm.Store) {
	t.Helper()
	dir = t.TempDir()
	s, err := shm.Open("fpm-www", shm.Options{Dir: dir, Memory: contract.MemoryConfig{Limit: 2 << 20, Policy: contract.AllKeysLRU}})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return dir, s
}

// ephpm runs the command line with stdin and returns its status and
// outputs.
func ephpm(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestAMissingSegmentIsSaidAndNotCreated(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := ephpm(t, "", "--dir", dir, "stats")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no segment fpm-www of uid")
	assert.Contains(t, errOut, "nothing was created")
	code, _, errOut = ephpm(t, "", "--dir", dir, "--segment", "other", "keys")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "ephpm.kv_backend=shm://other")
	files, _ := os.ReadDir(dir)
	assert.Empty(t, files)
	code, _, _ = ephpm(t, "", "bogus")
	assert.Equal(t, 2, code)
}

func TestCommandsOnASegment(t *testing.T) {
	dir, s := segment(t)
	before := s.MemoryConfig()
	for i := 0; i < 30; i++ {
		require.NoError(t, s.Set("user:"+strconv.Itoa(i), []byte(strings.Repeat("x", i)), time.Duration(i)*time.Hour))
	}
	require.NoError(t, s.Set("bin", []byte{0, 1, 0xff}, 0))
	out, _, _, err := backend.SetNXGet(s, "session_lock:abc", []byte("tok"), time.Minute, "session:abc", nil)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	_, err = s.SetNX("lock:report", []byte("t"), time.Minute)
	require.NoError(t, err)

	code, text, _ := ephpm(t, "", "--dir", dir, "stats")
	require.Equal(t, 0, code)
	assert.Contains(t, text, "keys         33")
	assert.Contains(t, text, "eviction allkeys-lru")
	code, text, _ = ephpm(t, "", "--dir", dir, "stats", "--json")
	require.Equal(t, 0, code)
	var stats map[string]any
	require.NoError(t, json.Unmarshal([]byte(text), &stats))
	assert.Equal(t, float64(33), stats["keys"])
	assert.Equal(t, "shm", stats["backend"])
	assert.Equal(t, before, s.MemoryConfig(), "the command changed no setting of the segment")

	code, text, _ = ephpm(t, "", "--dir", dir, "keys", "user:2")
	require.Equal(t, 0, code)
	assert.Contains(t, text, "11 keys beginning with \"user:2\"")
	var keys struct {
		Keys []keyJSON `json:"keys"`
		Next uint64    `json:"next_cursor"`
	}
	code, text, _ = ephpm(t, "", "--dir", dir, "keys", "user:", "--json")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(text), &keys))
	assert.Len(t, keys.Keys, 30)
	for _, k := range keys.Keys {
		i, _ := strconv.Atoi(strings.TrimPrefix(k.Key, "user:"))
		assert.Equal(t, int64(i), k.Size, k.Key)
		if i > 0 {
			assert.InDelta(t, float64(time.Duration(i)*time.Hour/time.Millisecond), float64(k.TTLMS), 60000, k.Key)
		}
	}
	// Page by page: --limit, then --cursor, until no cursor is left.
	seen := map[string]bool{}
	var cursor uint64
	for pages := 0; pages == 0 || cursor != 0; pages++ {
		require.Less(t, pages, 1000)
		code, text, _ = ephpm(t, "", "--dir", dir, "keys", "--limit", "7", "--count", "3", "--cursor", strconv.FormatUint(cursor, 10), "--json")
		require.Equal(t, 0, code)
		keys.Keys, keys.Next = nil, 0
		require.NoError(t, json.Unmarshal([]byte(text), &keys))
		assert.LessOrEqual(t, len(keys.Keys), 7+3, "about the limit: the rest of a page")
		for _, k := range keys.Keys {
			seen[k.Key] = true
		}
		cursor = keys.Next
	}
	assert.Len(t, seen, 33, "every key once the pages are done")

	code, text, _ = ephpm(t, "", "--dir", dir, "locks")
	require.Equal(t, 0, code)
	assert.Regexp(t, `session_lock:abc\s+(59(\.\d)?s|1m0s)\s+pid `+strconv.Itoa(os.Getpid())+`\s+0\s+exclusive`, text)
	assert.Contains(t, text, "2 locks held")
	var locks struct {
		Locks []keyJSON `json:"locks"`
	}
	code, text, _ = ephpm(t, "", "--dir", dir, "locks", "--json")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(text), &locks))
	require.Len(t, locks.Locks, 2)

	code, text, _ = ephpm(t, "", "--dir", dir, "get", "user:3")
	assert.Equal(t, 0, code)
	assert.Equal(t, "xxx", text)
	code, text, _ = ephpm(t, "", "--dir", dir, "get", "bin", "--json")
	assert.Equal(t, 0, code)
	assert.Contains(t, text, `"value_base64": "AAH/"`)
	code, _, errOut := ephpm(t, "", "--dir", dir, "get", "nope")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no key nope")
	code, text, _ = ephpm(t, "", "--dir", dir, "del", "user:3", "--json")
	assert.Equal(t, 0, code)
	assert.Contains(t, text, `"deleted": true`)
	_, found, _ := s.GetInto("user:3", nil)
	assert.False(t, found)

	code, text, _ = ephpm(t, "", "--dir", dir, "check")
	assert.Equal(t, 0, code, text)
	assert.Contains(t, text, "every shard is consistent")
	code, text, _ = ephpm(t, "", "--dir", dir, "check", "--json")
	assert.Equal(t, 0, code)
	assert.Contains(t, text, `"ok": true`)

	code, _, errOut = ephpm(t, "no\n", "--dir", dir, "flush")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "nothing was removed")
	_, found, _ = s.GetInto("user:4", nil)
	assert.True(t, found)
	code, _, _ = ephpm(t, "yes\n", "--dir", dir, "flush")
	assert.Equal(t, 0, code)
	_, found, _ = s.GetInto("user:4", nil)
	assert.False(t, found)
	require.NoError(t, s.Set("k", []byte("v"), 0))
	code, text, _ = ephpm(t, "", "--dir", dir, "flush", "--yes", "--json")
	assert.Equal(t, 0, code)
	assert.Contains(t, text, `"flushed": true`)
	st, _ := s.Stats()
	assert.Zero(t, st.Keys)
}

// noTTL is a store whose PTTL fails, as a call on a shard found damaged
// between two calls does.
type noTTL struct{ backend.Backend }

func (noTTL) PTTL(string) (time.Duration, bool, error) {
	return 0, false, errors.New("shm: segment shard is corrupt: shard 1")
}

// A TTL that cannot be read fails ephpm get: it is not shown as "no TTL".
func TestGetFailsWhenTheTTLCannotBeRead(t *testing.T) {
	dir, s := segment(t)
	require.NoError(t, s.Set("k", []byte("v"), time.Hour))
	for _, json := range []bool{false, true} {
		var out, errOut bytes.Buffer
		args := []string{"--dir", dir, "get", "k"}
		if json {
			args = append(args, "--json")
		}
		code := runIn(&env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
			wrap: func(b backend.Backend) backend.Backend { return noTTL{b} }}, args)
		assert.Equal(t, 1, code, "json %v", json)
		assert.Empty(t, out.String(), "no value with no TTL to go with it")
		assert.Contains(t, errOut.String(), "the TTL of k: shm: segment shard is corrupt: shard 1")
	}
	code, text, _ := ephpm(t, "", "--dir", dir, "get", "k", "--json")
	require.Equal(t, 0, code)
	assert.Contains(t, text, `"ttl_ms": 3599`)
}

// ephpm path prints the files of the segment the options name, by the
// rule the store names them by, whether or not they exist: as root with
// no segment of its own, the one user's who has it.
func TestPathPrintsTheSegmentsFilesByTheStoresRule(t *testing.T) {
	dir := t.TempDir()
	code, text, _ := ephpm(t, "", "--dir", dir, "--segment", "app", "path")
	require.Equal(t, 0, code)
	assert.Equal(t, strings.Join(shm.Files(dir, "app", os.Geteuid()), "\n")+"\n", text)
	code, text, _ = ephpm(t, "", "--dir", dir, "--pool", "www", "path", "--json")
	require.Equal(t, 0, code)
	var out struct {
		Segment, Fences string
		Exists          bool
	}
	require.NoError(t, json.Unmarshal([]byte(text), &out))
	assert.Equal(t, shm.PathOf(dir, "fpm-www", os.Geteuid()), out.Segment)
	assert.False(t, out.Exists)
	if os.Geteuid() == 0 {
		require.NoError(t, os.WriteFile(shm.PathOf(dir, "app", 33), nil, 0o600))
		code, text, _ = ephpm(t, "", "--dir", dir, "--segment", "app", "path")
		require.Equal(t, 0, code)
		assert.Equal(t, strings.Join(shm.Files(dir, "app", 33), "\n")+"\n", text)
	}
	code, _, _ = ephpm(t, "", "--redis", "redis://127.0.0.1:1", "path")
	assert.Equal(t, 1, code)
}

func TestCheckReportsADamagedSegment(t *testing.T) {
	dir, s := segment(t)
	for i := 0; i < 500; i++ {
		require.NoError(t, s.Set("k"+strconv.Itoa(i), []byte("value"), 0))
	}
	f, err := os.OpenFile(s.Path(), os.O_RDWR, 0)
	require.NoError(t, err)
	info, _ := f.Stat()
	// Zeros over the back half of the file: the heaps.
	_, err = f.WriteAt(make([]byte, info.Size()/2), info.Size()/2)
	require.NoError(t, err)
	f.Close()
	code, text, _ := ephpm(t, "", "--dir", dir, "check", "--json")
	assert.Equal(t, 1, code)
	assert.Contains(t, text, `"ok": false`)
	for _, cmd := range []string{"keys", "locks"} {
		code, text, errOut := ephpm(t, "", "--dir", dir, cmd)
		assert.Equal(t, 1, code, "%s: a walk that skipped a shard fails", cmd)
		assert.Regexp(t, `ephpm: skipped: shm: segment shard is corrupt: shard \d+ of `, errOut, "%s names the shard", cmd)
		assert.Contains(t, text, "incomplete: the walk skipped", cmd)
		code, text, _ = ephpm(t, "", "--dir", dir, cmd, "--json")
		assert.Equal(t, 1, code, cmd)
		var out struct{ Skipped []string }
		require.NoError(t, json.Unmarshal([]byte(text), &out))
		assert.NotEmpty(t, out.Skipped, cmd)
	}
}

func TestServeRefusesARemoteAddressUnlessToldAndGivenAPassword(t *testing.T) {
	dir, _ := segment(t)
	code, _, errOut := ephpm(t, "", "--dir", dir, "serve", "--listen", "0.0.0.0:0")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not a loopback address")
	assert.Contains(t, errOut, "--allow-remote")
	code, _, errOut = ephpm(t, "", "--dir", dir, "serve", "--listen", ":0", "--allow-remote")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "a password is required")
	empty := filepath.Join(t.TempDir(), "pass")
	os.WriteFile(empty, nil, 0o600)
	code, _, errOut = ephpm(t, "", "--dir", dir, "serve", "--requirepass-file", empty)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "holds no password")
	for _, addr := range []string{"127.0.0.1:6380", "127.9.9.9:1", "[::1]:6380", "localhost:6380"} {
		ok, err := isLoopback(addr)
		require.NoError(t, err)
		assert.True(t, ok, addr)
	}
	for _, addr := range []string{":6380", "0.0.0.0:6380", "[::]:6380", "10.1.2.3:6380"} {
		ok, err := isLoopback(addr)
		require.NoError(t, err)
		assert.False(t, ok, addr)
	}
}

// lockedBuffer is a buffer a serve writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serving runs ephpm with args (a serve) until the test ends, and returns
// where it serves once it says so, and what it wrote to stderr so far.
func serving(t *testing.T, args ...string) (where string, stderr *lockedBuffer) {
	t.Helper()
	stderr = &lockedBuffer{}
	stop, done := make(chan struct{}), make(chan struct{})
	code := 0
	go func() {
		defer close(done)
		code = runIn(&env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr, stop: stop}, args)
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		assert.Equal(t, 0, code, "serve stops with status 0: %s", stderr)
	})
	re := regexp.MustCompile(` on (?:unix socket )?(\S+) \(`)
	for deadline := time.Now().Add(hangCatch); ; time.Sleep(5 * time.Millisecond) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stderr
		}
		select {
		case <-done:
			t.Fatalf("serve ended: %s", stderr)
		default:
		}
		require.True(t, time.Now().Before(deadline), "serve said nothing: %s", stderr)
	}
}

// hangCatch bounds the waits for a server's answers: it only catches a
// hang, never the host's pace.
const hangCatch = 2 * time.Minute

// ping sends PING on a new connection to network addr and returns the
// reply's line.
func ping(t *testing.T, network, addr string) string {
	t.Helper()
	c, err := net.Dial(network, addr)
	require.NoError(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(hangCatch))
	_, err = c.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSpace(line)
}

// Whoever reaches the endpoint reads and writes every session and lock of
// the pool, so serve never hands that to every local user unasked: on TCP
// it wants a password or --no-auth; on --unix the socket admits the
// segment's user alone, with no password.
func TestServeWantsAPasswordNoAuthOrASocketOnlyTheSegmentsUserOpens(t *testing.T) {
	dir, s := segment(t)
	t.Setenv(passwordEnv, "")
	code, _, errOut := ephpm(t, "", "--dir", dir, "serve", "--listen", "127.0.0.1:0")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "a password is required: every local user can connect")
	assert.Contains(t, errOut, "--unix PATH")
	assert.Contains(t, errOut, "--no-auth")
	code, _, errOut = ephpm(t, "", "--dir", dir, "serve", "--help")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "Whoever connects reads and writes\neverything the segment holds")
	code, _, errOut = ephpm(t, "", "--dir", dir, "serve", "--no-auth", "--requirepass", "x")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "give one")

	addr, log := serving(t, "--dir", dir, "serve", "--listen", "127.0.0.1:0", "--no-auth")
	assert.Contains(t, log.String(), "no password (--no-auth): every local user may connect")
	assert.Equal(t, "+PONG", ping(t, "tcp", addr))

	t.Setenv(passwordEnv, "sesame")
	addr, _ = serving(t, "--dir", dir, "serve", "--listen", "127.0.0.1:0")
	assert.Equal(t, "-NOAUTH Authentication required.", ping(t, "tcp", addr))

	// The socket is the segment's user's, whoever runs serve: as root, a
	// segment of another uid gives that uid the socket.
	t.Setenv(passwordEnv, "")
	owner := os.Geteuid()
	if owner == 0 { // that uid's copy of the segment
		owner = 65534
		b, err := os.ReadFile(s.Path())
		require.NoError(t, err)
		theirs := shm.PathOf(dir, "fpm-www", owner)
		require.NoError(t, os.WriteFile(theirs, b, 0o600))
		require.NoError(t, os.Chown(theirs, owner, -1))
	}
	sock := filepath.Join(t.TempDir(), "ephpm.sock")
	where, log := serving(t, "--dir", dir, "--user", strconv.Itoa(owner), "serve", "--unix", sock)
	assert.Equal(t, sock, where)
	assert.Contains(t, log.String(), fmt.Sprintf("mode 0600, uid %d", owner))
	fi, err := os.Lstat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket|0o600, fi.Mode())
	assert.Equal(t, uint32(owner), fi.Sys().(*syscall.Stat_t).Uid)
	assert.Equal(t, "+PONG", ping(t, "unix", sock))

	code, _, errOut = ephpm(t, "", "--dir", dir, "--user", strconv.Itoa(owner), "serve", "--unix", sock)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "a server listens there already")
	code, _, errOut = ephpm(t, "", "--dir", dir, "serve", "--unix", sock+"2", "--listen", "127.0.0.1:0")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "give one place to listen")
	plain := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(plain, nil, 0o600))
	code, _, errOut = ephpm(t, "", "--dir", dir, "--user", strconv.Itoa(owner), "serve", "--unix", plain)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not a socket")
}

// --maxclients and --timeout are the server's: one connection beyond the
// limit is refused in Redis's words, an idle one is closed. The refusal is
// asserted while the first cannot have been idle for --timeout yet (timed
// from before its last command): a host slower than that may find the
// place free again.
func TestServeHoldsItsMaxClientsAndTimeout(t *testing.T) {
	dir, _ := segment(t)
	const idle = time.Second
	addr, _ := serving(t, "--dir", dir, "serve", "--listen", "127.0.0.1:0", "--no-auth", "--maxclients", "1", "--timeout", idle.String())
	first, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer first.Close()
	first.SetDeadline(time.Now().Add(hangCatch))
	r := bufio.NewReader(first)
	sent := time.Now()
	first.Write([]byte("PING\r\n"))
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "+PONG\r\n", line)
	if got := ping(t, "tcp", addr); time.Since(sent) < idle {
		assert.Equal(t, "-ERR max number of clients reached", got)
	}
	_, err = r.ReadString('\n')
	assert.Equal(t, io.EOF, err, "the idle connection is closed after --timeout")
	for deadline := time.Now().Add(hangCatch); ping(t, "tcp", addr) != "+PONG"; time.Sleep(5 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "its place is free again")
	}
	code, _, errOut := ephpm(t, "", "--dir", dir, "serve", "--no-auth", "--maxclients", "0")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "--maxclients must be at least 1")
}

func TestCommandsOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	url := "redis://" + srv.Addr + "/0"
	prefixes := []string{sessionkeys.DataPrefix, sessionkeys.LockPrefix}
	r, err := redisstore.Open(url, redisstore.Options{Colocated: prefixes, Pinned: prefixes})
	require.NoError(t, err)
	defer r.Close()
	for i := 0; i < 25; i++ {
		require.NoError(t, r.Set("k:"+strconv.Itoa(i), []byte("vv"), time.Hour))
	}
	_, err = r.SetNX(sessionkeys.LockKey("sid1"), []byte("tok"), time.Minute)
	require.NoError(t, err)
	_, _, err = r.LockAttempt("lock:rw", []byte("reader1"), contract.LockShared, time.Minute, 0)
	require.NoError(t, err)

	var keys struct {
		Keys []keyJSON `json:"keys"`
	}
	code, text, errOut := ephpm(t, "", "--redis", url, "keys", "--json", "--count", "7")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(text), &keys))
	names := map[string]keyJSON{}
	for _, k := range keys.Keys {
		names[k.Key] = k
	}
	assert.Contains(t, names, sessionkeys.LockKey("sid1"), "the store's name, its hash tag taken off")
	assert.Equal(t, int64(2), names["k:3"].Size)
	assert.InDelta(t, float64(time.Hour/time.Millisecond), float64(names["k:3"].TTLMS), 60000)

	code, text, _ = ephpm(t, "", "--redis", url, "locks")
	require.Equal(t, 0, code)
	assert.Regexp(t, `session_lock:sid1\s+\S+\s+-\s+0\s+exclusive`, text)
	assert.Regexp(t, `lock:rw\s+\S+\s+-\s+0\s+shared \(1 readers\)`, text)
	assert.NotContains(t, text, "k:3")

	code, text, _ = ephpm(t, "", "--redis", url, "get", "k:1")
	assert.Equal(t, 0, code)
	assert.Equal(t, "vv", text)
	code, _, _ = ephpm(t, "", "--redis", url, "del", "k:1")
	assert.Equal(t, 0, code)
	code, text, _ = ephpm(t, "", "--redis", url, "stats", "--json")
	assert.Equal(t, 0, code)
	assert.Contains(t, text, `"backend": "redis"`)
	code, text, _ = ephpm(t, "", "--redis", url, "check")
	assert.Equal(t, 0, code)
	assert.Contains(t, text, "answers")
	code, _, _ = ephpm(t, "", "--redis", url, "flush", "--yes")
	assert.Equal(t, 0, code)
	_, found, _ := r.GetInto("k:2", nil)
	assert.False(t, found)
	code, _, errOut = ephpm(t, "", "--redis", url, "serve")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "serves a segment")
}
