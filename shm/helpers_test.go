package shm

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/kv"
)

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// testName is a segment name for t, unique to this test process.
func testName(t *testing.T) string {
	n := "t" + strconv.Itoa(os.Getpid()) + "-" + unsafeChars.ReplaceAllString(t.Name(), "_")
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// openTest opens a fresh segment for t with cfg, closed and removed when
// t ends, after its integrity is checked.
func openTest(t *testing.T, cfg kv.MemoryConfig, pinned ...string) *Store {
	t.Helper()
	return openWith(t, Options{Memory: cfg, PinnedPrefixes: pinned})
}

// openWith is openTest with every option.
func openWith(t *testing.T, opts Options) *Store {
	t.Helper()
	name := testName(t)
	path := Path("", name)
	os.Remove(path)
	os.Remove(fencesPath(path))
	s, err := Open(name, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := s.Check(); err != nil {
			t.Errorf("integrity: %v", err)
		}
		s.Close()
		os.Remove(path)
		os.Remove(fencesPath(path))
	})
	return s
}

func removeSegment(name string) {
	os.Remove(Path("", name))
	os.Remove(fencesPath(Path("", name)))
}
