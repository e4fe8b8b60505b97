package redisstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedact(t *testing.T) {
	for raw, want := range map[string]string{
		"redis://127.0.0.1:6379/0?dial_timeout=1s":                 "redis://127.0.0.1:6379/0?dial_timeout=1s",
		"redis://:pw@127.0.0.1:6379/0":                             "redis://xxxxx@127.0.0.1:6379/0",
		"redis://app:pw@h:1":                                       "redis://xxxxx@h:1",
		"redis://pw@h:1":                                           "redis://xxxxx@h:1",
		"redis://:p@w/o?r#d@h:1?db=2":                              "redis://xxxxx@h:1?db=2",
		"redis:pw@h":                                               "redis:xxxxx@h",
		"unix://:pw@/run/redis.sock?db=1":                          "unix://xxxxx@/run/redis.sock?db=1",
		"unix:///run/redis.sock":                                   "unix:///run/redis.sock",
		"redis+sentinel://:sp@a:1,b:2/0?master_name=m&password=dp": "redis+sentinel://xxxxx@a:1,b:2/0?master_name=m&password=xxxxx",
		"redis+sentinel://a:1?password=d@p&master_name=m":          "redis+sentinel://a:1?password=xxxxx&master_name=m",
		"redis://h?sentinel_password=x&Pass%77ord=y&password":      "redis://h?sentinel_password=xxxxx&Pass%77ord=xxxxx&password",
		"memory": "memory",
	} {
		assert.Equal(t, want, redact(raw), raw)
	}
}

// A refused URL's message names no secret, whatever part of it is
// malformed, and still says what is wrong.
func TestParseErrorsNameNoSecret(t *testing.T) {
	for raw, says := range map[string]string{
		"redis://:Sup3rS3cret@127.0.0.1:6379/abc":                                                           "invalid database number",
		"redis://:Sup3rS3cret@127.0.0.1:6379?max_retries=1":                                                 "max_retries",
		"redis://:Sup3rS3cret@127.0.0.1:6379?dial_timeout=soon":                                             "dial_timeout",
		"redis://u:Sup3rS3cret@127.0.0.1:port":                                                              "invalid port",
		"redis://:Sup3r/S3cret@127.0.0.1:6379":                                                              "user info",
		"redis://:Sup3r?S3cret@127.0.0.1:6379":                                                              "user info",
		"redis://:Sup3r#S3cret@127.0.0.1:6379":                                                              "user info",
		"redis://:Sup3r%zzS3cret@127.0.0.1:6379":                                                            "user info",
		"redis://:Sup3r S3cret@127.0.0.1:6379":                                                              "user info",
		"redis://:Sup3rS3cret@127.0.0.1\x7f":                                                                "control character",
		"redis:Sup3rS3cret@127.0.0.1":                                                                       "two slashes",
		"ftp://:Sup3rS3cret@x":                                                                              "unknown scheme",
		"rediss://:Sup3rS3cret@x?tls_ca=/nonexistent":                                                       "tls_ca",
		"redis+cluster://:Sup3rS3cret@127.0.0.1:7000,127.0.0.1":                                             "addr",
		"redis+sentinel://127.0.0.1:26379?password=Sup3rS3cret":                                             "master_name",
		"redis+sentinel://127.0.0.1:1?master_name=m&sentinel_password=Sup3rS3cret":                          "sentinel_password",
		"redis+sentinel://:Sup3rS3cret@127.0.0.1:1?master_name=m&password=Sup3r%zzS3cret&dial_timeout=soon": "",
	} {
		_, err := parse(raw)
		require.ErrorIs(t, err, ErrConfig, raw)
		msg := err.Error()
		assert.NotContains(t, msg, "Sup3r", raw)
		assert.NotContains(t, msg, "S3cret", raw)
		assert.Contains(t, msg, says, raw)
		assert.Contains(t, msg, mask, "%s: the message names the masked URL", raw)
	}
}
