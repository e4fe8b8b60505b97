package redisstore

import (
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/redistest"
)

// Per-command cost in Go, without PHP, on the direct path and through
// go-redis (as Cluster and Sentinel are served): the round trip dominates;
// the allocations and the CPU beside it are what the client adds.
func BenchmarkCommands(b *testing.B) {
	srv := redistest.Start(b)
	for _, path := range []string{"direct", "go-redis"} {
		b.Run(path, func(b *testing.B) {
			s, err := Open("redis://"+srv.Addr, testOptions)
			require.NoError(b, err)
			defer s.Close()
			if path == "go-redis" {
				s.direct = nil
			}
			benchmarkCommands(b, s)
		})
	}
}

func benchmarkCommands(b *testing.B, s *Store) {
	v := make([]byte, 64)
	require.NoError(b, s.Set("bench:k", v, 0))
	dst := make([]byte, 8192)
	b.Run("get", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			if _, _, err := s.GetInto("bench:k", dst); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("set", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			if err := s.Set("bench:k", v, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	token := []byte("0123456789abcdef0123456789abcdef")
	b.Run("lock pair", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := s.SetNX("bench:l", token, 30*time.Second); err != nil {
				b.Fatal(err)
			}
			if _, err := s.DelIfEq("bench:l", token); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// reportCPU reports the process's user and system CPU time per operation
// from now to the call of the function it returns. On an idle machine a
// round trip is mostly waiting for a sleeping CPU to wake, and the CPU a
// client spends per command is what shows once the CPUs are busy.
func reportCPU(b *testing.B) func() {
	user0, sys0 := cpuTimes()
	return func() {
		user1, sys1 := cpuTimes()
		b.ReportMetric(float64(user1-user0)/float64(b.N), "user-ns/op")
		b.ReportMetric(float64(sys1-sys0)/float64(b.N), "sys-ns/op")
	}
}

func cpuTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// A release on the direct path, as the script and natively: wall time per
// release from this process and the server's CPU per release (INFO
// commandstats), for docs/design.md. "native, no wake" is the native
// command alone, which would leave waiters to their timeouts: what the
// PUBLISH beside it costs.
func BenchmarkRelease(b *testing.B) {
	srv := redistest.Start(b)
	s, err := Open("redis://"+srv.Addr, testOptions)
	require.NoError(b, err)
	defer s.Close()
	token := []byte("0123456789abcdef0123456789abcdef")
	release := map[string]func(string) error{
		"script": func(key string) error {
			_, err := s.run(delIfEqScript, []string{key}, token, releaseChannel(key))
			return err
		},
		"native": func(key string) error {
			_, err := s.DelIfEq(key, token)
			return err
		},
		"native, no wake": func(key string) error {
			_, err := s.direct.doNative(&nativeCall{form: func(have native) []any { return have.release(key, token) }})
			return err
		},
		"lined": func(key string) error {
			_, err := s.DelIfEq(key, token)
			return err
		},
	}
	// The native cases release a key that can have no line (queueKeys), as
	// DelIfEq releases such a key natively; "lined" is DelIfEq of a key
	// that can have one: the script with the line's keys, on every server.
	key := map[string]string{"script": "bench}l", "native": "bench}l", "native, no wake": "bench}l", "lined": "bench:l"}
	for _, name := range []string{"script", "native", "native, no wake", "lined"} {
		b.Run(name, func(b *testing.B) {
			err := release[name](key[name] + "warm") // loads the script, learns the server
			if err == errScript {
				b.Skip("the server has no native release")
			}
			require.NoError(b, err)
			require.NoError(b, s.c.ConfigResetStat(ctx).Err())
			var inRelease time.Duration
			for b.Loop() {
				if _, err := s.SetNX(key[name], token, 30*time.Second); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := release[name](key[name]); err != nil {
					b.Fatal(err)
				}
				inRelease += time.Since(start)
			}
			b.ReportMetric(float64(inRelease.Nanoseconds())/float64(b.N), "release-ns/op")
			cmds := []string{"delifeq", "delex", "publish"}
			if name == "script" || name == "lined" {
				cmds = []string{"evalsha"} // its own time holds its inner commands'
			}
			b.ReportMetric(serverMicros(b, s, cmds...)/float64(b.N), "server-us/release")
		})
	}
}

// serverMicros is the server's time in cmds since the last CONFIG
// RESETSTAT.
func serverMicros(b *testing.B, s *Store, cmds ...string) float64 {
	text, err := s.c.Info(ctx, "commandstats").Result()
	require.NoError(b, err)
	var total float64
	for _, line := range strings.Split(text, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
		if !ok || !slices.Contains(cmds, name) {
			continue
		}
		for _, field := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(field, "usec="); ok {
				n, err := strconv.ParseFloat(v, 64)
				require.NoError(b, err)
				total += n
			}
		}
	}
	return total
}

// The read/write lock members against the lock pair, on the direct path:
// an attempt and its release, each one script, with the name free or
// already read-held by n others (the scripts decode and re-encode the whole
// record). Server time from INFO commandstats, per pair.
func BenchmarkReadWriteLock(b *testing.B) {
	srv := redistest.Start(b)
	s, err := Open("redis://"+srv.Addr, testOptions)
	require.NoError(b, err)
	defer s.Close()
	token := []byte("0123456789abcdef0123456789abcdef")
	pair := func(mode contract.LockMode) func() error {
		return func() error {
			if _, _, err := s.LockAttempt("bench:rw", token, mode, 30*time.Second, 0); err != nil {
				return err
			}
			_, err := s.LockRelease("bench:rw", token)
			return err
		}
	}
	cases := []struct {
		name    string
		readers int
		run     func() error
	}{
		{"set_nx pair", 0, func() error {
			if _, err := s.SetNX("bench:rw", token, 30*time.Second); err != nil {
				return err
			}
			_, err := s.DelIfEq("bench:rw", token)
			return err
		}},
		{"exclusive pair", 0, pair(contract.LockExclusive)},
		{"shared pair", 0, pair(contract.LockShared)},
		{"shared pair beside 100 readers", 100, pair(contract.LockShared)},
		{"shared pair beside 999 readers", MaxReadHolds - 1, pair(contract.LockShared)}, // the most: its hold is the last
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			_, err := s.Del("bench:rw")
			require.NoError(b, err)
			for i := range c.readers {
				_, _, err := s.LockAttempt("bench:rw", []byte("reader-"+strconv.Itoa(i)), contract.LockShared, 0, 0)
				require.NoError(b, err)
			}
			require.NoError(b, c.run()) // loads the scripts
			require.NoError(b, s.c.ConfigResetStat(ctx).Err())
			for b.Loop() {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(serverMicros(b, s, "set", "evalsha", "delifeq", "delex", "publish")/float64(b.N), "server-us/pair")
		})
	}
}
