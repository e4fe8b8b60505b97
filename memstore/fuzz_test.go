package memstore

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// model is the reference the store is checked against: a map and a clock,
// with the store's memory and eviction rules spelled out plainly. It tracks
// entries that are expired but not yet removed, since they are still
// charged. Which entries an eviction takes is the store's choice (LRU by
// sampling); the model checks that each was one the rules let go, and that
// eviction happens exactly when the rules say the write can fit.
type model struct {
	m              map[string]mEntry
	now            int64
	used, sessions int64
	limit          int64
	sessionLimit   int64 // in force
	policy         contract.Policy
}

type mEntry struct {
	v      []byte
	exp    int64
	pinned bool
	read   bool // session data read since it was written
}

const (
	fuzzData = "session:"
	fuzzLock = "session_lock:"
)

// fuzzKeys holds plain keys, two sessions' data and locks, and a session
// with no lock ever taken.
var fuzzKeys = []string{"k0", "k1", "k2", fuzzData + "a", fuzzData + "b", fuzzLock + "a", fuzzLock + "b", fuzzData + "c"}

func fuzzKind(k string) contract.KeyKind {
	switch {
	case strings.HasPrefix(k, fuzzLock):
		return contract.KindSessionLock
	case strings.HasPrefix(k, fuzzData):
		return contract.KindSession
	}
	return contract.KindPlain
}

func (m *model) expired(e mEntry) bool { return e.exp != 0 && e.exp <= m.now }
func mcost(k string, v []byte) int64   { return int64(valueOffset(len(k))+len(v)) + entryOverhead }

// live returns k's live entry, removing an expired one (as the store's
// operations that look an entry up do).
func (m *model) live(k string) (mEntry, bool) {
	e, ok := m.m[k]
	if ok && m.expired(e) {
		m.remove(k)
		return mEntry{}, false
	}
	return e, ok
}

func (m *model) remove(k string) {
	if e, ok := m.m[k]; ok {
		m.used -= mcost(k, e.v)
		if fuzzKind(k) == contract.KindSession {
			m.sessions -= mcost(k, e.v)
		}
		delete(m.m, k)
	}
}

func (m *model) sweep() {
	for k, e := range m.m {
		if m.expired(e) {
			m.remove(k)
		}
	}
}

// class is k's eviction class for a write under protect guarded by guard,
// and whether the policy may evict k at all: never a pinned entry (a
// lock), nor session data whose lock is there, nor protect or guard.
func (m *model) class(k, protect, guard string) (contract.EvictClass, bool) {
	e := m.m[k]
	c := contract.EvictPlain
	if fuzzKind(k) == contract.KindSession {
		if _, held := m.m[fuzzLock+strings.TrimPrefix(k, fuzzData)]; held {
			return 0, false
		}
		c = contract.EvictNew
		if e.read {
			c = contract.EvictReturned
		}
	}
	ok := !e.pinned && k != protect && k != guard && m.policy != contract.NoEviction && (m.policy != contract.VolatileLRU || e.exp != 0)
	return c, ok
}

// outcome is what a write must do: be stored without eviction (fits),
// be stored after evicting (evicts), or fail with err.
type outcome struct {
	fits, evicts bool
	err          error
}

// decide says what a write of v under k must do. One that does not fit
// (counting the entry it replaces, even if expired) first sweeps expired
// entries; then it fails at once unless evicting every entry the rules
// allow would make it fit.
func (m *model) decide(k, guard string, v []byte) outcome {
	kind := fuzzKind(k)
	delta := func() int64 {
		d := mcost(k, v)
		if old, ok := m.m[k]; ok {
			d -= mcost(k, old.v)
		}
		return d
	}
	shorts := func() (sessions, store int64) {
		d := delta()
		if kind == contract.KindSession && m.sessionLimit > 0 && d > 0 {
			sessions = m.sessions + d - m.sessionLimit
		}
		if m.limit > 0 && d > 0 {
			store = m.used + d - m.limit
		}
		return sessions, store
	}
	if ss, st := shorts(); ss <= 0 && st <= 0 {
		return outcome{fits: true}
	}
	m.sweep()
	ss, st := shorts()
	if ss <= 0 && st <= 0 {
		return outcome{fits: true}
	}
	var plain, sessions int64
	for key, e := range m.m {
		if c, ok := m.class(key, k, guard); ok {
			if c == contract.EvictPlain {
				plain += mcost(key, e.v)
			} else {
				sessions += mcost(key, e.v)
			}
		}
	}
	budget := fmt.Errorf("%w: session data would exceed session_memory_limit (%d bytes)", contract.ErrNoMemory, m.sessionLimit)
	if ss > 0 && ss > sessions {
		return outcome{err: budget}
	}
	if kind != contract.KindSession {
		sessions = 0
	}
	if st > plain+sessions {
		return outcome{err: contract.ErrNoMemory}
	}
	return outcome{evicts: true}
}

// settle checks, after a write of kind under k that the model allowed to
// evict, which entries the store evicted: each one the rules let go
// (session data only for session data), and sessions read back only once
// no session that was not read back is left to go. It drops them from
// the model.
func (m *model) settle(t *testing.T, s *Store, k, guard string) {
	t.Helper()
	classes := map[string]contract.EvictClass{}
	var gone []string
	for key := range m.m {
		c, ok := m.class(key, k, guard)
		if !s.Exists(key) {
			if !ok {
				t.Fatalf("write of %s evicted %s, which the rules keep", k, key)
			}
			if c != contract.EvictPlain && fuzzKind(k) != contract.KindSession {
				t.Fatalf("write of %s evicted session data %s", k, key)
			}
			gone = append(gone, key)
		}
		classes[key] = c
	}
	for _, key := range gone {
		m.remove(key)
	}
	for _, key := range gone {
		if classes[key] != contract.EvictReturned {
			continue
		}
		for other := range m.m {
			if c, ok := m.class(other, k, guard); ok && c == contract.EvictNew {
				t.Fatalf("write of %s evicted %s, read back, before %s, never read", k, key, other)
			}
		}
	}
}

// put stores v under k as a write that decide allowed, keeping the read
// flag of the live entry it replaces (the same session's).
func (m *model) put(k string, v []byte, exp int64, pinned bool) {
	e := mEntry{v: append([]byte(nil), v...), exp: exp, pinned: pinned}
	if old, ok := m.m[k]; ok {
		e.read = old.read && !m.expired(old)
		m.used -= mcost(k, old.v)
		if fuzzKind(k) == contract.KindSession {
			m.sessions -= mcost(k, old.v)
		}
	}
	m.m[k] = e
	m.used += mcost(k, v)
	if fuzzKind(k) == contract.KindSession {
		m.sessions += mcost(k, v)
	}
}

// checkTotals recounts what each shard's counters say: the memory charged
// to session data and the evictable totals of every slot.
func checkTotals(s *Store) error {
	var sessions int64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		var ev [numSlots + 1]int64 // and slotKept
		var used int64
		for j, b := range sh.t.blocks {
			if b == nil {
				continue
			}
			kind := s.sess.Kind(blockKey(b))
			ev[s.slotOf(sh, b, kind, sh.t.hashes[j])] += blockCost(b)
			if kind == contract.KindSession {
				used += blockCost(b)
			}
		}
		got, gotUsed := sh.evictable, sh.sessionUsed
		sh.mu.Unlock()
		if got != [numSlots]int64(ev[:numSlots]) || gotUsed != used {
			return fmt.Errorf("shard %d: totals %v, session data %d; recounted %v, %d", i, got, gotUsed, ev, used)
		}
		sessions += used
	}
	if n := s.mem.sessions.Load(); n != sessions {
		return fmt.Errorf("session data charged %d, recounted %d", n, sessions)
	}
	return nil
}

var fuzzValues = [][]byte{{}, []byte("a"), []byte("bb"), []byte("7"), []byte("-3"), []byte("xyz12345"), []byte("+1"), []byte("007"), []byte("-0")}

func FuzzStoreAgainstModel(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 2, 2, 1, 0, 1, 10, 1, 0, 1, 4, 1, 1})
	f.Add([]byte{200, 2, 2, 0, 3, 7, 0, 2, 12, 1, 2, 11, 0, 0, 1, 0, 5, 2, 2})
	f.Add([]byte{1, 0, 2, 1, 6, 2, 0, 4, 9, 0, 2, 10, 1, 1, 3, 0, 0, 8, 0})
	f.Add([]byte{250, 9, 2, 3, 5, 2, 4, 5, 12, 3, 5, 12, 4, 5, 0, 3, 0, 1, 0, 1, 12, 7, 1, 3, 1, 4, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		clk := &fakeClock{}
		s := New(Options{Now: clk.now, SweepInterval: -1, SessionDataPrefix: fuzzData, SessionLockPrefix: fuzzLock})
		defer s.Close()
		m := &model{m: map[string]mEntry{}}
		if data[0] > 100 {
			m.limit = 100 + int64(data[0])
			m.policy = contract.Policy(data[1] % 3)
			cfg := contract.MemoryConfig{Limit: m.limit, Policy: m.policy}
			if n := int64(data[1]/3) % 4; n != 0 {
				cfg.SessionLimit = m.limit * n / 4
			}
			if err := s.Configure(cfg); err != nil {
				t.Fatal(err)
			}
			m.sessionLimit = s.Stats().SessionLimit
		}
		data = data[2:]
		var evictions uint64 // as of the step before
		for step := 0; len(data) >= 3; step, data = step+1, data[3:] {
			op, a, b := data[0]%15, data[1], data[2]
			k := fuzzKeys[int(a)%len(fuzzKeys)]
			kind := fuzzKind(k)
			v := fuzzValues[int(b)%len(fuzzValues)]
			ttl := time.Duration(b%3) * time.Second
			exp := func() int64 {
				if ttl == 0 {
					return 0
				}
				return m.now + int64(ttl)
			}
			fail := func(what string, got, want any) {
				t.Fatalf("step %d op %d key %s: %s: got %v, want %v", step, op, k, what, got, want)
			}
			// write checks a write the model decided as want: its error,
			// and what it evicted.
			guard := ""
			write := func(what string, want outcome, err error) bool {
				if (want.err == nil) != (err == nil) || (err != nil && err.Error() != want.err.Error()) {
					fail(what, err, want.err)
				}
				if want.evicts {
					m.settle(t, s, k, guard)
				} else if n := s.Stats().Evictions; n != evictions {
					fail(what+" evictions", n, evictions)
				}
				return err == nil
			}
			switch op {
			case 0: // Get
				got, ok := s.Get(k)
				e, wok := m.live(k)
				if ok != wok || !bytes.Equal(got, e.v) {
					fail("Get", string(got), string(e.v))
				}
				if wok && kind == contract.KindSession {
					e.read = true
					m.m[k] = e
				}
			case 1: // Set
				want := m.decide(k, guard, v)
				if write("Set", want, s.Set(k, v, ttl)) {
					m.put(k, v, exp(), kind == contract.KindSessionLock)
				}
			case 2: // SetNX
				if e, ok := m.m[k]; ok && !m.expired(e) {
					if out, err := s.SetNX(k, v, ttl); err != nil || out != contract.Exists {
						fail("SetNX", []any{out, err}, contract.Exists)
					}
					break
				}
				want := m.decide(k, guard, v)
				out, err := s.SetNX(k, v, ttl)
				if write("SetNX", want, err) {
					if out != contract.Inserted {
						fail("SetNX", out, contract.Inserted)
					}
					m.put(k, v, exp(), true)
				}
			case 3: // Del
				_, wok := m.m[k]
				wok = wok && !m.expired(m.m[k])
				m.remove(k)
				if got := s.Del(k); got != wok {
					fail("Del", got, wok)
				}
			case 4: // DelIfEq
				e, ok := m.live(k)
				want := ok && bytes.Equal(e.v, v)
				if want {
					m.remove(k)
				}
				if got := s.DelIfEq(k, v); got != want {
					fail("DelIfEq", got, want)
				}
			case 5, 6: // Expire, ExpireIfEq
				e, ok := m.live(k)
				want := ok && (op == 5 || bytes.Equal(e.v, v))
				if want {
					e.exp = exp()
					m.m[k] = e
				}
				var got bool
				var err error
				if op == 5 {
					got, err = s.Expire(k, ttl)
				} else {
					got, err = s.ExpireIfEq(k, v, ttl)
				}
				if err != nil || got != want {
					fail("Expire", got, want)
				}
			case 7: // IncrBy
				delta := int64(b%5) - 2
				got, err := s.IncrBy(k, delta, ttl)
				e, ok := m.live(k)
				var want int64
				var wantErr error
				newExp, pinned := exp(), kind == contract.KindSessionLock
				if ok {
					// An integer is what FormatInt writes, as Redis reads it.
					n, perr := strconv.ParseInt(string(e.v), 10, 64)
					if perr != nil || strconv.FormatInt(n, 10) != string(e.v) {
						wantErr = contract.ErrNotInteger
					}
					want, newExp, pinned = n+delta, e.exp, e.pinned
				} else {
					want = delta
				}
				if wantErr != nil {
					if !errors.Is(err, wantErr) {
						fail("IncrBy", err, wantErr)
					}
					break
				}
				value := []byte(strconv.FormatInt(want, 10))
				if write("IncrBy", m.decide(k, guard, value), err) {
					if got != want {
						fail("IncrBy", got, want)
					}
					m.put(k, value, newExp, pinned)
				}
			case 8: // Exists
				e, ok := m.m[k]
				want := ok && !m.expired(e)
				if got := s.Exists(k); got != want {
					fail("Exists", got, want)
				}
			case 9: // PTTL
				e, ok := m.m[k]
				ok = ok && !m.expired(e)
				got, gok := s.PTTL(k)
				want := time.Duration(-1)
				if ok && e.exp != 0 {
					want = time.Duration(e.exp - m.now)
				}
				if gok != ok || (ok && got != want) {
					fail("PTTL", got, want)
				}
			case 10: // time passes
				d := int64(b%3) * int64(500*time.Millisecond)
				clk.advance(time.Duration(d))
				m.now += d
			case 11: // Sweep
				s.Sweep()
				m.sweep()
			case 12: // SetGuarded by key g holding v
				g := fuzzKeys[int(b)%len(fuzzKeys)]
				guard = g
				ge, gok := m.m[g]
				if !gok || m.expired(ge) || !bytes.Equal(ge.v, v) {
					if got, err := s.SetGuarded(k, v, ttl, g, v); got || err != nil {
						fail("SetGuarded", []any{got, err}, false)
					}
					break
				}
				want := m.decide(k, guard, v)
				got, err := s.SetGuarded(k, v, ttl, g, v)
				if write("SetGuarded", want, err) {
					if !got {
						fail("SetGuarded", got, true)
					}
					m.put(k, v, exp(), kind == contract.KindSessionLock)
				}
			case 14: // DelGuarded by key g holding v
				g := fuzzKeys[int(b)%len(fuzzKeys)]
				ge, gok := m.live(g)
				want := gok && bytes.Equal(ge.v, v)
				if want {
					m.remove(k)
				}
				got, err := s.DelGuarded(k, g, v)
				if err != nil || got != want {
					fail("DelGuarded", []any{got, err}, want)
				}
			case 13: // Flush, rarely
				if b%8 == 0 {
					s.Flush()
					m.m = map[string]mEntry{}
					m.used, m.sessions = 0, 0
				}
			}
			st := s.Stats()
			if op != 1 && op != 2 && op != 7 && op != 12 && st.Evictions != evictions {
				t.Fatalf("step %d op %d: evicted without a write", step, op)
			}
			evictions = st.Evictions
			if st.BytesUsed != m.used || st.Keys != int64(len(m.m)) || st.SessionBytes != m.sessions {
				t.Fatalf("step %d op %d: used %d keys %d sessions %d, model %d %d %d",
					step, op, st.BytesUsed, st.Keys, st.SessionBytes, m.used, len(m.m), m.sessions)
			}
			if m.limit > 0 && (st.BytesUsed > m.limit || (m.sessionLimit > 0 && st.SessionBytes > m.sessionLimit)) {
				t.Fatalf("step %d op %d: used %d sessions %d, limits %d %d", step, op, st.BytesUsed, st.SessionBytes, m.limit, m.sessionLimit)
			}
			if err := checkTotals(s); err != nil {
				t.Fatalf("step %d op %d: %v", step, op, err)
			}
		}
	})
}
