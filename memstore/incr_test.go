package memstore

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

func TestIncrBy(t *testing.T) {
	s, clk := newTestStore(t)
	n, err := s.IncrBy("c", 5, time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(5), n, "created at delta")
	n, _ = s.IncrBy("c", -7, time.Hour)
	assert.Equal(t, int64(-2), n)
	ttl, _ := s.PTTL("c")
	assert.Equal(t, time.Second, ttl, "an existing entry keeps its TTL")
	v, _ := s.Get("c")
	assert.Equal(t, "-2", string(v))

	clk.advance(time.Second)
	n, _ = s.IncrBy("c", 1, 0)
	assert.Equal(t, int64(1), n, "expired: created anew")

	// Redis's rules (see parseInteger): the backends agree.
	for _, bad := range []string{"abc", "", "1.5", " 1", "1 ", "+1", "007", "00", "-0", "-", "-01",
		"9223372036854775808", "-9223372036854775809", "99999999999999999999"} {
		require.NoError(t, s.Set("bad", []byte(bad), 0))
		_, err := s.IncrBy("bad", 1, 0)
		assert.ErrorIs(t, err, contract.ErrNotInteger, "%q", bad)
		v, _ := s.Get("bad")
		assert.Equal(t, bad, string(v), "unchanged")
	}
	require.NoError(t, s.Set("max", []byte(strconv.FormatInt(math.MaxInt64, 10)), 0))
	_, err = s.IncrBy("max", 1, 0)
	assert.ErrorIs(t, err, contract.ErrOverflow)
	require.NoError(t, s.Set("min", []byte(strconv.FormatInt(math.MinInt64, 10)), 0))
	_, err = s.IncrBy("min", -1, 0)
	assert.ErrorIs(t, err, contract.ErrOverflow)
	n, err = s.IncrBy("min", 1, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(math.MinInt64+1), n)
}

func TestIncrByIsAtomic(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	race(32, func(int) bool {
		for i := 0; i < 200; i++ {
			if _, err := s.IncrBy("counter", 1, 0); err != nil {
				t.Error(err)
			}
		}
		return false
	})
	v, _ := s.Get("counter")
	assert.Equal(t, "6400", string(v))
}

// IncrBy's "not an integer" error quotes the value: it must be read under
// the lock, since the block may be rewritten in place right after. -race
// reports the read otherwise; a torn quote fails the test outright.
func TestIncrByErrorQuotesAWholeValue(t *testing.T) {
	s := New(Options{SweepInterval: -1})
	defer s.Close()
	require.NoError(t, s.Set("k", []byte("aaaaaaaa"), 0))
	whileRunning(1, func(int) {
		assert.NoError(t, s.Set("k", []byte("aaaaaaaa"), 0))
		assert.NoError(t, s.Set("k", []byte("bbbbbbbb"), 0))
	}, func() {
		for i := 0; i < 20000; i++ {
			_, err := s.IncrBy("k", 1, 0)
			require.ErrorIs(t, err, contract.ErrNotInteger)
			if m := err.Error(); !strings.HasSuffix(m, `"aaaaaaaa"`) && !strings.HasSuffix(m, `"bbbbbbbb"`) {
				t.Fatalf("torn value in %q", m)
			}
		}
	})
}
