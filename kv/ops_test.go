package kv

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExistsAndPTTL(t *testing.T) {
	s, clk := newTestStore(t)
	assert.False(t, s.Exists("k"))
	_, ok := s.PTTL("k")
	assert.False(t, ok)

	require.NoError(t, s.Set("k", nil, 0))
	assert.True(t, s.Exists("k"))
	ttl, ok := s.PTTL("k")
	assert.True(t, ok)
	assert.Equal(t, time.Duration(-1), ttl, "no expiry")

	require.NoError(t, s.Set("t", []byte("v"), 10*time.Second))
	clk.advance(4 * time.Second)
	ttl, _ = s.PTTL("t")
	assert.Equal(t, 6*time.Second, ttl)
	clk.advance(6 * time.Second)
	assert.False(t, s.Exists("t"))
	_, ok = s.PTTL("t")
	assert.False(t, ok)
}

func TestExpireIfEq(t *testing.T) {
	s, clk := newTestStore(t)
	_, err := s.SetNX("lock", []byte("mine"), time.Second)
	require.NoError(t, err)
	ok, err := s.ExpireIfEq("lock", []byte("theirs"), time.Hour)
	require.NoError(t, err)
	assert.False(t, ok)
	ttl, _ := s.PTTL("lock")
	assert.Equal(t, time.Second, ttl, "a mismatch changes nothing")

	ok, _ = s.ExpireIfEq("lock", []byte("mine"), time.Minute)
	assert.True(t, ok)
	clk.advance(30 * time.Second)
	ttl, _ = s.PTTL("lock")
	assert.Equal(t, 30*time.Second, ttl)

	clk.advance(30 * time.Second)
	ok, _ = s.ExpireIfEq("lock", []byte("mine"), time.Minute)
	assert.False(t, ok, "an expired lock cannot be refreshed")
	_, err = s.ExpireIfEq("lock", []byte("mine"), -1)
	assert.ErrorIs(t, err, ErrInvalidArgument)
}

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
		assert.ErrorIs(t, err, ErrNotInteger, "%q", bad)
		v, _ := s.Get("bad")
		assert.Equal(t, bad, string(v), "unchanged")
	}
	require.NoError(t, s.Set("max", []byte(strconv.FormatInt(maxInt64, 10)), 0))
	_, err = s.IncrBy("max", 1, 0)
	assert.ErrorIs(t, err, ErrOverflow)
	require.NoError(t, s.Set("min", []byte(strconv.FormatInt(minInt64, 10)), 0))
	_, err = s.IncrBy("min", -1, 0)
	assert.ErrorIs(t, err, ErrOverflow)
	n, err = s.IncrBy("min", 1, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(minInt64+1), n)
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

func TestFlushWakesWaitersAndEmptiesTheStore(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	for i := 0; i < 1000; i++ {
		require.NoError(t, s.Set(fmt.Sprint(i), []byte("v"), time.Duration(i%2)*time.Hour))
	}
	done := make(chan bool)
	go func() { done <- s.Wait("7", time.Minute) }()
	require.Eventually(t, func() bool {
		sh := s.shardFor("7")
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return sh.waiters["7"] != nil
	}, 5*time.Second, time.Millisecond)
	s.Flush()
	assert.True(t, <-done)
	assert.Equal(t, 0, s.Len())
	_, ok := s.Get("1")
	assert.False(t, ok)
	require.NoError(t, s.Set("after", []byte("v"), 0))
	assert.Equal(t, 1, s.Len())
}

func TestStats(t *testing.T) {
	s, clk := newTestStore(t)
	require.NoError(t, s.Set("a", []byte("1"), time.Second))
	s.Get("a")
	s.Get("a")
	s.Get("missing")
	s.SetNX("l", []byte("t"), 0)
	s.SetNX("l", []byte("u"), 0)
	s.DelIfEq("l", []byte("u"))
	s.DelIfEq("l", []byte("t"))
	clk.advance(time.Second)
	s.Get("a")
	st := s.Stats()
	assert.Equal(t, uint64(2), st.Hits)
	assert.Equal(t, uint64(2), st.Misses)
	assert.Equal(t, uint64(1), st.Sets)
	assert.Equal(t, uint64(1), st.SetNXWins)
	assert.Equal(t, uint64(1), st.SetNXLosses)
	assert.Equal(t, uint64(1), st.DelIfEqMatches)
	assert.Equal(t, uint64(1), st.DelIfEqMismatches)
	assert.Equal(t, uint64(1), st.Expirations)
	assert.Equal(t, int64(0), st.Keys)
	assert.Regexp(t, `^[0-9a-f-]{36}$`, st.InstanceID)
	other := New(Options{SweepInterval: -1})
	defer other.Close()
	assert.NotEqual(t, st.InstanceID, other.Stats().InstanceID)
}
