package backend_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/memstore"
	"github.com/ephpm/ephpm/sessionkeys"
	"github.com/ephpm/ephpm/shm"
)

// go test -run X -bench Session -count 5 ./backend
//
// The session path through the Backend interface, as the table's members
// call it: each benchmark is one request's calls on one session, on the
// in-process store (with the session rule the bridge gives it) and on a
// shared-memory segment.

func benchBackends(b *testing.B, run func(b *testing.B, s backend.Backend)) {
	rule := memstore.Options{SessionDataPrefix: sessionkeys.DataPrefix, SessionLockPrefix: sessionkeys.LockPrefix}
	b.Run("memory", func(b *testing.B) {
		s := memstore.New(rule)
		b.Cleanup(s.Close)
		run(b, backend.Memory{Store: s})
	})
	b.Run("shm", func(b *testing.B) {
		name := fmt.Sprintf("bench-backend-%d", time.Now().UnixNano())
		s, err := shm.Open(name, shm.Options{Memory: contract.MemoryConfig{Limit: 64 << 20},
			SessionDataPrefix: rule.SessionDataPrefix, SessionLockPrefix: rule.SessionLockPrefix})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			s.Close()
			os.Remove(s.Path())
			os.Remove(s.Path() + ".fences1")
		})
		run(b, s)
	})
}

const benchSID = "0123456789abcdef0123456789abcdef"

var benchToken = []byte("0123456789abcdef0123456789abcdef")

// BenchmarkSessionRequest is a session request in two calls: the lock
// taken and the data read (set_nx_wait_get's attempt), then the data
// written and the lock released (set_guarded_release).
func BenchmarkSessionRequest(b *testing.B) {
	benchBackends(b, func(b *testing.B, s backend.Backend) {
		lock, data := sessionkeys.LockKey(benchSID), sessionkeys.DataKey(benchSID)
		v, dst := make([]byte, 141), make([]byte, 1024)
		s.Set(data, v, time.Hour)
		for b.Loop() {
			backend.SetNXGet(s, lock, benchToken, 30*time.Second, data, dst)
			backend.SetGuardedRelease(s, data, v, time.Hour, lock, benchToken)
		}
	})
}

// BenchmarkSessionRequestFenced is BenchmarkSessionRequest with the fenced
// lock: set_nx_wait_get_fenced's attempt, then set_fenced_release.
func BenchmarkSessionRequestFenced(b *testing.B) {
	benchBackends(b, func(b *testing.B, s backend.Backend) {
		lock, data := sessionkeys.LockKey(benchSID), sessionkeys.DataKey(benchSID)
		v, dst := make([]byte, 141), make([]byte, 1024)
		s.Set(data, v, time.Hour)
		for b.Loop() {
			_, _, _, f, _ := backend.SetNXGetFenced(s, lock, benchToken, 30*time.Second, data, dst)
			backend.SetFencedRelease(s, data, v, time.Hour, lock, f, benchToken)
		}
	})
}

// BenchmarkSessionRequestLazy is a request that changed nothing: the lock
// and the read, then the TTL refreshed and the lock released
// (expire_guarded_release).
func BenchmarkSessionRequestLazy(b *testing.B) {
	benchBackends(b, func(b *testing.B, s backend.Backend) {
		lock, data := sessionkeys.LockKey(benchSID), sessionkeys.DataKey(benchSID)
		v, dst := make([]byte, 141), make([]byte, 1024)
		s.Set(data, v, time.Hour)
		for b.Loop() {
			backend.SetNXGet(s, lock, benchToken, 30*time.Second, data, dst)
			backend.ExpireGuardedRelease(s, data, time.Hour, lock, benchToken)
		}
	})
}

// BenchmarkGuardedWrite is a write under a held lock (set_guarded), and
// BenchmarkFencedWrite one under its fence (set_fenced).
func BenchmarkGuardedWrite(b *testing.B) {
	benchBackends(b, func(b *testing.B, s backend.Backend) {
		lock, data := sessionkeys.LockKey(benchSID), sessionkeys.DataKey(benchSID)
		v := make([]byte, 141)
		s.SetNX(lock, benchToken, time.Hour)
		for b.Loop() {
			backend.SetGuarded(s, data, v, time.Hour, lock, benchToken)
		}
	})
}

func BenchmarkFencedWrite(b *testing.B) {
	benchBackends(b, func(b *testing.B, s backend.Backend) {
		lock, data := "{bench}:lock", "{bench}:data"
		v := make([]byte, 141)
		_, f, _ := backend.SetNXFenced(s, lock, benchToken, time.Hour)
		for b.Loop() {
			backend.SetFenced(s, data, v, time.Hour, lock, f)
		}
	})
}

// BenchmarkFencedLockPair is a fenced grant and its release (set_nx_fenced,
// del_if_eq).
func BenchmarkFencedLockPair(b *testing.B) {
	benchBackends(b, func(b *testing.B, s backend.Backend) {
		lock := "{bench}:lock"
		for b.Loop() {
			backend.SetNXFenced(s, lock, benchToken, 30*time.Second)
			s.DelIfEq(lock, benchToken)
		}
	})
}
