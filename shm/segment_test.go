package shm

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

const small = 1 << 20

func openIn(dir string) (*Store, error) {
	return Open("seg", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: small}})
}

func TestOpenRefusesWhatIsNotOurs(t *testing.T) {
	cases := map[string]struct {
		make func(t *testing.T, path string)
		want string
	}{
		"symlink": {func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path+".target", nil, 0o600))
			require.NoError(t, os.Symlink(path+".target", path))
		}, "symbolic link"},
		"directory": {func(t *testing.T, path string) {
			require.NoError(t, os.Mkdir(path, 0o700))
		}, "is a directory"},
		"fifo": {func(t *testing.T, path string) {
			require.NoError(t, syscall.Mkfifo(path, 0o600))
		}, "not a regular file"},
		"other owner": {func(t *testing.T, path string) {
			if os.Geteuid() != 0 {
				t.Skip("chown needs root")
			}
			require.NoError(t, os.WriteFile(path, nil, 0o600))
			require.NoError(t, os.Chown(path, 65534, 65534))
		}, "owned by uid 65534"},
		"mode 0644": {func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, nil, 0o600))
			require.NoError(t, os.Chmod(path, 0o644))
		}, "mode 0644"},
		"bad magic": {func(t *testing.T, path string) {
			b := make([]byte, 8192)
			copy(b, "NOTOURS!")
			require.NoError(t, os.WriteFile(path, b, 0o600))
		}, "bad magic"},
		"short file, bad magic": {func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("NOTOURS!"), 0o600))
		}, "bad magic"},
		"a newer layout version": {withVersion(layoutVersion + 1),
			fmt.Sprintf("it has layout version %d; this library reads version %d", layoutVersion+1, layoutVersion)},
		// Version 1 had no session budget: its shards' headers have no
		// session tallies, its keys hash by the whole key.
		"layout version 1": {withVersion(1), fmt.Sprintf("it has layout version 1; this library reads version %d", layoutVersion)},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := Path(dir, "seg")
			c.make(t, path)
			before := contents(path)
			s, err := openIn(dir)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			assert.Contains(t, err.Error(), path, "the error names the file")
			assert.Contains(t, err.Error(), c.want)
			after := contents(path)
			assert.Equal(t, before, after, "a refused file is left as it was")
		})
	}
}

// withVersion makes a segment, then writes layout version v in its header.
func withVersion(v uint32) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		s, err := openIn(filepath.Dir(path))
		require.NoError(t, err)
		s.Close()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		require.NoError(t, err)
		defer f.Close()
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], v)
		_, err = f.WriteAt(b[:], hVersion)
		require.NoError(t, err)
	}
}

// contents reads a regular file (not one a symlink names, not a FIFO).
func contents(path string) []byte {
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	b, _ := os.ReadFile(path)
	return b
}

func TestAnIncompatibleHeaderSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	b := make([]byte, 8192)
	copy(b, "NOTOURS!")
	require.NoError(t, os.WriteFile(Path(dir, "seg"), b, 0o600))
	_, err := openIn(dir)
	require.ErrorIs(t, err, ErrIncompatible)
	assert.Contains(t, err.Error(), "remove the file, or choose another name")
}

func TestAHalfMadeSegmentIsMadeAgain(t *testing.T) {
	// Its creator died before writing the header: the file exists, empty.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(Path(dir, "seg"), nil, 0o600))
	s, err := openIn(dir)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Set("k", []byte("v"), 0))
	require.NoError(t, s.Check())
}

func TestTheSizeIsFixedAtCreation(t *testing.T) {
	dir := t.TempDir()
	s, err := openIn(dir)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Set("k", []byte("v"), 0))
	_, err = Open("seg", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: 2 * small}})
	require.ErrorIs(t, err, contract.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "memory_limit 1048576")
	again, err := Open("seg", Options{Dir: dir}) // 0: whatever it has
	require.NoError(t, err)
	defer again.Close()
	st, _ := again.Stats()
	assert.Equal(t, int64(small), st.MemoryLimit)
	assert.Equal(t, int64(1), st.Keys, "reopening keeps the entries")
	fi, err := os.Stat(Path(dir, "seg"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func TestBadNamesAreRefused(t *testing.T) {
	for _, n := range []string{"", "a/b", "..", "x y", string(make([]byte, 65))} {
		if n == ".." {
			continue // a valid file name component inside dir: ephpm-...UID
		}
		_, err := Open(n, Options{Dir: t.TempDir()})
		assert.ErrorIs(t, err, contract.ErrInvalidArgument, "%q", n)
	}
}

// The segment's size as README ("Shared-memory backend") and docs/design.md
// state it: heaps of 1.25 × the limit, an index of 8 bytes per 64 heap
// bytes rounded up to a power of two of slots (1/8 to 1/4 of the heaps),
// and ~116 KiB of headers: 1.41-1.57 × the limit from 4 MiB up, 1.50-1.51 ×
// at powers of two from 16 MiB (64 MiB: 100 782 080 bytes), more below.
func TestTheSegmentSizeIsAsDocumented(t *testing.T) {
	ratio := func(limit int64) float64 { return float64(planLayout(limit).segSize) / float64(limit) }
	assert.Equal(t, int64(100_782_080), planLayout(DefaultMemoryLimit).segSize, "README's figure for 64 MiB")
	for limit := int64(4 << 20); limit <= 8<<30; limit += limit/7 + 12345 {
		r := ratio(limit)
		assert.True(t, r >= 1.40 && r <= 1.58, "limit %d: %.3f ×", limit, r)
	}
	for limit := int64(16 << 20); limit <= 8<<30; limit *= 2 {
		r := ratio(limit)
		assert.True(t, r >= 1.50 && r < 1.51, "limit %d: %.3f ×", limit, r)
	}
	assert.InDelta(t, 1.60, ratio(1<<20), 0.01, "1 MiB")
	assert.InDelta(t, 1.91, ratio(MinMemoryLimit), 0.01, "the smallest limit")

	// The file is that size.
	dir := t.TempDir()
	s, err := Open("sized", Options{Dir: dir, Memory: contract.MemoryConfig{Limit: 16 << 20}})
	require.NoError(t, err)
	defer s.Close()
	fi, err := os.Stat(Path(dir, "sized"))
	require.NoError(t, err)
	assert.Equal(t, planLayout(16<<20).segSize, fi.Size())
}
