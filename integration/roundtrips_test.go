package integration

import (
	"bufio"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/internal/redistest"
)

// monitor attaches redis-cli MONITOR to srv and returns a function that
// runs f and then the commands clients sent while it ran (those scripts ran
// inside the server, MONITOR's "lua" lines, are left out; so are the ones
// that open a connection: HELLO, INFO, CLIENT, SELECT, AUTH, PING).
func monitor(t *testing.T, srv *redistest.Server) func(f func()) []string {
	return func(f func()) []string {
		cmd := exec.Command(redistest.CLIBinary(), "-p", strconv.Itoa(srv.Port), "monitor")
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		lines := bufio.NewScanner(out)
		require.True(t, lines.Scan())
		require.Equal(t, "OK", lines.Text())
		f()
		marker := fmt.Sprintf("end-of-run-%d", srv.Port)
		require.NoError(t, exec.Command(redistest.CLIBinary(), "-p", strconv.Itoa(srv.Port), "echo", marker).Run())
		var sent []string
		for lines.Scan() {
			line := lines.Text()
			if strings.Contains(line, marker) {
				break
			}
			if strings.Contains(line, " lua] ") {
				continue
			}
			_, rest, ok := strings.Cut(line, "] \"")
			if !ok {
				continue
			}
			name, _, _ := strings.Cut(rest, "\"")
			switch strings.ToLower(name) {
			case "hello", "info", "client", "select", "auth", "ping":
				continue
			}
			sent = append(sent, strings.ToLower(name))
		}
		return sent
	}
}

// A session request on Redis makes two round trips when it writes (lock
// and read in one script, write and release in another), two when it only
// reads (read_and_close, session_abort()), and two for a lazy write (the
// TTL refresh and the release in one script), with the session lock's
// fence minted in the first.
func TestSessionRequestRoundTripsOnRedis(t *testing.T) {
	php := lookPath(t, "php")
	srv := redistest.Start(t)
	watch := monitor(t, srv)
	request := func(code string) {
		path := script(t, "req.php", "<?php\nsession_id('rt');\n"+code)
		out, err := exec.Command(php, "-n", "-d", "extension="+extension(t),
			"-d", "ephpm.kv_backend=redis://"+srv.Addr, "-d", "session.save_handler=ephpm",
			"-d", "session.use_cookies=0", "-d", "session.cache_limiter=", path).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.NotContains(t, string(out), "Warning", "%s", out)
	}
	write := "session_start();\n$_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;\n"

	for _, c := range []struct {
		name, code string
		want       []string
	}{
		{"write", write, []string{"evalsha", "evalsha"}},
		{"read_and_close", "session_start(['read_and_close' => true]);\n", []string{"evalsha", "evalsha"}},
		{"session_abort", "session_start();\n$_SESSION['x'] = 1;\nsession_abort();\n", []string{"evalsha", "evalsha"}},
		{"lazy write", "session_start();\n", []string{"evalsha", "evalsha"}},
	} {
		request(c.code) // the server learns the scripts it runs (NOSCRIPT, then EVAL) once
		sent := watch(func() { request(c.code) })
		// A release by the server's own command goes out with its PUBLISH
		// in one write: one round trip.
		var trips []string
		for i, cmd := range sent {
			if cmd == "publish" && i > 0 && (sent[i-1] == "delifeq" || sent[i-1] == "delex") {
				continue
			}
			if cmd == "delifeq" || cmd == "delex" {
				cmd = "evalsha" // the release's other form
			}
			trips = append(trips, cmd)
		}
		assert.Equal(t, c.want, trips, "%s: commands sent %v", c.name, sent)
	}
	// The requests took the session lock with its fence (the library has
	// set_nx_wait_get_fenced): the counts above are the fenced path's.
	fence, err := exec.Command(redistest.CLIBinary(), "-p", strconv.Itoa(srv.Port), "get",
		"ephpm:fence:session_lock:{rt}").Output()
	require.NoError(t, err)
	assert.Regexp(t, `^[1-9][0-9]*\n$`, string(fence), "the session lock's fence key")
}
