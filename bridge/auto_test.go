package bridge

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAutoChoosesBySAPI(t *testing.T) {
	for sapi, shared := range map[string]bool{"cli": false, "embed": false, "": false, "fpm-fcgi": true,
		"apache2handler": true, "cgi-fcgi": true, "cli-server": false} {
		name, _, why := autoSegment(sapi)
		assert.Equal(t, shared, name != "", "%s: %q (%s)", sapi, name, why)
		assert.NotEmpty(t, why)
	}
	t.Setenv("PHP_CLI_SERVER_WORKERS", "4")
	name, anchor, _ := autoSegment("cli-server")
	assert.Equal(t, "cli-server-", name, "the test binary has no -S address")
	assert.Equal(t, os.Getpid(), anchor, "a process whose parent runs another command is the master")
	assert.Equal(t, "127.0.0.1:8080", serverAddress([]byte("php\x00-S\x00127.0.0.1:8080\x00-t\x00.")))
	assert.Regexp(t, `^__\.1__80-[0-9a-f]{8}$`, segmentName(serverAddress([]byte("php\x00-S[:.1]:80"))))
	assert.Equal(t, "fpm-www", segmentName("fpm-www"), "a name that is one is kept")
	assert.NotEqual(t, segmentName("fpm-a_b"), segmentName("fpm-a b"), "pools whose names differ never share")

	// Anchors only where the parent is the server's master: the test's
	// parent (go test) is no php-fpm master, so a worker here is taken
	// for an orphan and anchors nothing; a wrapper running another
	// program is not a php -S master.
	_, anchor, _ = autoSegment("fpm-fcgi")
	assert.Zero(t, anchor, "an fpm worker whose parent is not a master")
	assert.True(t, sameProgram(os.Getpid()))
	assert.False(t, sameProgram(1), "pid 1 runs another program (or is not ours to read)")
	assert.False(t, fpmMaster(os.Getpid()))
	long := strings.Repeat("p", 70)
	assert.LessOrEqual(t, len(segmentName(long+"1")), 64)
	assert.NotEqual(t, segmentName(long+"1"), segmentName(long+"2"), "long names with one beginning never share")
}
