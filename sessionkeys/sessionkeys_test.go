package sessionkeys

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The C handler and this package must name keys alike: read the header.
func TestKeyPrefixesMatchTheCHeader(t *testing.T) {
	header, err := os.ReadFile("../include/ephpm_session.h")
	require.NoError(t, err)
	define := func(name string) string {
		m := regexp.MustCompile(`#define\s+` + name + `\s+("[^"]*"|\d+)`).FindSubmatch(header)
		require.NotNil(t, m, "%s not defined in the header", name)
		return string(m[1])
	}
	assert.Equal(t, `"`+DataPrefix+`"`, define("EPHPM_SESSION_DATA_PREFIX"))
	assert.Equal(t, `"`+LockPrefix+`"`, define("EPHPM_SESSION_LOCK_PREFIX"))
	assert.Equal(t, "16", define("EPHPM_SESSION_TOKEN_BYTES"))
	assert.Equal(t, 16, TokenBytes)
	assert.Equal(t, "session:abc", DataKey("abc"))
	assert.Equal(t, "session_lock:abc", LockKey("abc"))
}

func TestNewTokenIsFreshAnd128Bits(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		tok, err := NewToken()
		require.NoError(t, err)
		require.Regexp(t, `^[0-9a-f]{32}$`, tok)
		require.False(t, seen[tok])
		seen[tok] = true
	}
}

// ValidSID is PHP's php_session_valid_key, which the C handler calls: the
// ids phpt/session/s19 sends are refused, and its valid one of every
// allowed character is taken.
func TestValidSIDIsPHPsRule(t *testing.T) {
	for _, sid := range []string{"", "_", "abc$x", "../../etc/passwd", "a.b", "a b", "a\x00b", "{a}", strings.Repeat("a", SIDMaxLen+1), strings.Repeat("a", 300)} {
		assert.False(t, ValidSID(sid), "%q", sid)
	}
	for _, sid := range []string{"Az09,-", "a", strings.Repeat("a", SIDMaxLen), SIDChars} {
		assert.True(t, ValidSID(sid), "%q", sid)
	}
	assert.Len(t, SIDChars, 26+26+10+2)
}
