package redisstore

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, bad := range []string{
		"ftp://x", "redis://x?max_retries=3", "redis://x?bogus=1", "redis+sentinel://x:1",
		"redis://x?tls_ca=/nonexistent", "rediss://x?tls_ca=/nonexistent", "rediss://x?tls_cert=/a",
		"unix+cluster:///tmp/x", "redis://x/notadb",
	} {
		_, err := parse(bad)
		assert.ErrorIs(t, err, ErrConfig, bad)
	}
	c, err := parse("redis://u:p@127.0.0.1:7000/2?dial_timeout=1s&pool_size=4")
	o, mode := c.opts, c.mode
	require.NoError(t, err)
	assert.Equal(t, Standalone, mode)
	assert.Equal(t, []string{"127.0.0.1:7000"}, o.Addrs)
	assert.Equal(t, 2, o.DB)
	assert.Equal(t, time.Second, o.DialTimeout)
	assert.Equal(t, 4, o.PoolSize)
	assert.Equal(t, -1, o.MaxRetries, "retries are always off")
	assert.Equal(t, "p", o.Password)

	c, err = parse("redis+cluster://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002")
	o, mode = c.opts, c.mode
	require.NoError(t, err)
	assert.Equal(t, Cluster, mode)
	assert.Len(t, o.Addrs, 3)
	c, err = parse("redis+cluster://u:p@127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002?read_timeout=1s")
	o = c.opts
	require.NoError(t, err)
	assert.Equal(t, []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}, o.Addrs)
	assert.Equal(t, time.Second, o.ReadTimeout)
	assert.Equal(t, "p", o.Password)

	c, err = parse("redis+sentinel://:sp@127.0.0.1:26379,127.0.0.1:26380/1?master_name=mymaster&password=dp")
	o, mode = c.opts, c.mode
	require.NoError(t, err)
	assert.Equal(t, Sentinel, mode)
	assert.Equal(t, "mymaster", o.MasterName)
	assert.Equal(t, "sp", o.SentinelPassword)
	assert.Equal(t, "dp", o.Password)
	assert.Len(t, o.Addrs, 2)
	assert.Equal(t, 1, o.DB)

	c, err = parse("unix:///tmp/redis.sock?db=3")
	o = c.opts
	require.NoError(t, err)
	assert.NotNil(t, o.Dialer)
	assert.Equal(t, 3, o.DB)
}

// A timeout go-redis reads as "no bound" (0 or a negative value) and a
// negative pool_size are refused with a message naming the parameter: a
// call on a server that stops answering must end within a bound, and
// pool_size=-5 made the client panic.
func TestParseRefusesUnboundedTimeoutsAndBadPoolSize(t *testing.T) {
	for _, q := range []string{
		"read_timeout=0", "read_timeout=-1", "read_timeout=0s", "read_timeout=-2s",
		"write_timeout=0", "write_timeout=-1", "dial_timeout=-1", "dial_timeout=0",
		"pool_timeout=-1", "pool_timeout=0", "pool_size=-5",
	} {
		for _, url := range []string{"redis://x/0?" + q, "redis+cluster://x:1,y:2?" + q, "redis+sentinel://x:1?master_name=m&" + q} {
			_, err := parse(url)
			require.ErrorIs(t, err, ErrConfig, url)
			name, _, _ := strings.Cut(q, "=")
			assert.Contains(t, err.Error(), name, url)
		}
	}
	for _, q := range []string{"read_timeout=1ms", "read_timeout=2", "dial_timeout=1s", "pool_size=0", "pool_size=3", "pool_timeout=2s"} {
		_, err := parse("redis://x/0?" + q)
		assert.NoError(t, err, q)
	}
}
