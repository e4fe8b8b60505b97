package header

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The header is what sessionkeys generates: a rule changed in
// sessionkeys/sessionkeys.go without go generate ./sessionkeys fails here.
func TestHeaderIsCurrent(t *testing.T) {
	want, err := Generate()
	require.NoError(t, err)
	got, err := os.ReadFile("../../../" + Path)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "%s is stale: run go generate ./sessionkeys", Path)
}

// The header begins with the line by which Go's tools and reviewers know a
// generated file.
func TestHeaderSaysItIsGenerated(t *testing.T) {
	text, err := Generate()
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`^/\* Code generated .* DO NOT EDIT\. \*/\n`), string(text))
}

func TestCStringRefusesWhatNeedsEscapes(t *testing.T) {
	s, err := cString("session:")
	require.NoError(t, err)
	assert.Equal(t, `"session:"`, s)
	for _, bad := range []string{`a"b`, `a\b`, "a\nb", "é"} {
		_, err := cString(bad)
		assert.Error(t, err, "%q", bad)
	}
}
