package memberlist

import (
	"bytes"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The generated files are what the header generates: a member added to
// the header without go generate ./bridge fails here.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := Generate("../../..")
	require.NoError(t, err)
	require.Len(t, files, 5)
	for name, want := range files {
		got, err := os.ReadFile("../../" + name)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "bridge/%s is stale: run go generate ./bridge", name)
	}
}

// Every file memberlist writes begins with the line by which Go's tools
// and reviewers know a generated file.
func TestGeneratedFilesSayTheyAre(t *testing.T) {
	files, err := Generate("../../..")
	require.NoError(t, err)
	marker := regexp.MustCompile(`^(// Code generated .* DO NOT EDIT\.|/\* Code generated .* DO NOT EDIT\. \*/)\n`)
	for name, text := range files {
		assert.Regexp(t, marker, string(text), "bridge/%s", name)
	}
}

func TestParseReadsEveryMemberInOrder(t *testing.T) {
	members, err := Parse([]byte(`
typedef struct ephpm_kv_ops {
    uint32_t abi_version;
    uint32_t struct_size;
    /* get: a comment with (parentheses); and a semicolon */
    int (*get)(const char *key, size_t key_len,
               char *buf, size_t buf_cap, size_t *value_len);
    int (*flush)(void);
    int (*stats)(ephpm_kv_stats *out);
} ephpm_kv_ops;`))
	require.NoError(t, err)
	require.Len(t, members, 3)
	assert.Equal(t, "get", members[0].Name)
	assert.Equal(t, []Param{{"const char *", "key"}, {"size_t", "key_len"}, {"char *", "buf"}, {"size_t", "buf_cap"}, {"size_t *", "value_len"}}, members[0].Params)
	assert.Empty(t, members[1].Params)
	assert.Equal(t, "EPHPM_BAD_BUF(key, key_len)\n        || EPHPM_BAD_BUF(buf, buf_cap)\n        || value_len == NULL", members[0].invalid())
	assert.Equal(t, "out == NULL || out->struct_size < sizeof(uint32_t)", members[2].invalid())
}

func TestGoExportNames(t *testing.T) {
	for name, want := range map[string]string{
		"get": "ephpmGoGet", "set_nx": "ephpmGoSetNX", "set_nx_wait": "ephpmGoSetNXWait",
		"del_if_eq": "ephpmGoDelIfEq", "pttl": "ephpmGoPTTL", "incr_by": "ephpmGoIncrBy",
	} {
		assert.Equal(t, want, GoExport(name))
	}
}

// A member Backend has no method for is the function of package backend of
// its name that takes the backend first (a Stepper or a Backend), called
// with the table's backend; a Backend method of the name comes first, and
// a function that does not take the backend first is no member's.
func TestAMemberIsABackendMethodElseABackendFunctionOfItsName(t *testing.T) {
	dir := t.TempDir()
	backendDir, bridgeDir := dir+"/backend", dir+"/bridge"
	require.NoError(t, os.Mkdir(backendDir, 0o755))
	require.NoError(t, os.Mkdir(bridgeDir, 0o755))
	require.NoError(t, os.WriteFile(backendDir+"/backend.go", []byte(`package backend

type Backend interface {
	Del(key string) (bool, error)
}

type Stepper interface{ Step(s *int) error }

func Del(b Stepper, key string) (bool, error)              { return false, nil }
func DelTwice(b Stepper, key string) (bool, error)         { return false, nil }
func DelBoth(b Backend, key, other string) (bool, error)   { return false, nil }
func DelAlone(key string) (bool, error)                    { return false, nil }
`), 0o644))
	fs, err := ReadFuncs(backendDir, "example.com/m/backend", bridgeDir)
	require.NoError(t, err)
	members, err := Parse([]byte(`
typedef struct ephpm_kv_ops {
    int (*del)(const char *key, size_t key_len);
    int (*del_twice)(const char *key, size_t key_len);
    int (*del_both)(const char *key, size_t key_len, const char *other, size_t other_len);
    int (*del_alone)(const char *key, size_t key_len);
} ephpm_kv_ops;`))
	require.NoError(t, err)
	var src bytes.Buffer
	imports := map[string]string{}
	for _, m := range members[:3] {
		require.NoError(t, export(&src, m, fs, imports))
	}
	assert.Contains(t, src.String(), "current().Del(k)", "the Backend method first")
	assert.Contains(t, src.String(), "backend.DelTwice(current(), k)")
	assert.Contains(t, src.String(), "backend.DelBoth(current(), k, o)")
	assert.Equal(t, map[string]string{"backend": "example.com/m/backend"}, imports)
	assert.ErrorContains(t, export(&src, members[3], fs, imports), "del_alone")
}
