package sessionkeys

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

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
