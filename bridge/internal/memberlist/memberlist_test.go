package memberlist

import (
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
