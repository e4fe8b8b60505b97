package kv

import (
	"bytes"
	"errors"
	"strconv"
	"testing"
	"time"
)

// model is the reference the store is checked against: a map and a clock,
// with the store's memory rules spelled out plainly. It tracks entries that
// are expired but not yet removed, since they are still charged.
type model struct {
	m     map[string]mEntry
	now   int64
	used  int64
	limit int64
}

type mEntry struct {
	v   []byte
	exp int64
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

// put stores v under k if it fits; like the store, a write that does not
// fit first sweeps expired entries and tries again.
func (m *model) put(k string, v []byte, exp int64) bool {
	delta := mcost(k, v)
	if old, ok := m.m[k]; ok {
		delta -= mcost(k, old.v)
	}
	if m.limit > 0 && m.used+delta > m.limit {
		m.sweep()
		delta = mcost(k, v)
		if old, ok := m.m[k]; ok {
			delta -= mcost(k, old.v)
		}
		if m.used+delta > m.limit {
			return false
		}
	}
	m.m[k] = mEntry{v: append([]byte(nil), v...), exp: exp}
	m.used += delta
	return true
}

var fuzzValues = [][]byte{{}, []byte("a"), []byte("bb"), []byte("7"), []byte("-3"), []byte("xyz12345"), []byte("+1"), []byte("007"), []byte("-0")}

func FuzzStoreAgainstModel(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 2, 1, 0, 1, 10, 1, 0, 1, 4, 1, 1})
	f.Add([]byte{200, 2, 0, 3, 7, 0, 2, 12, 1, 2, 11, 0, 0, 1, 0, 5, 2, 2})
	f.Add([]byte{1, 2, 1, 6, 2, 0, 4, 9, 0, 2, 10, 1, 1, 3, 0, 0, 8, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		clk := &fakeClock{}
		s := New(Options{Now: clk.now, SweepInterval: -1})
		defer s.Close()
		m := &model{m: map[string]mEntry{}}
		if data[0] > 100 {
			m.limit = 100 + int64(data[0])
			if err := s.Configure(MemoryConfig{Limit: m.limit}); err != nil {
				t.Fatal(err)
			}
		}
		data = data[1:]
		for step := 0; len(data) >= 3; step, data = step+1, data[3:] {
			op, a, b := data[0]%15, data[1], data[2]
			k := "k" + strconv.Itoa(int(a%4))
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
			switch op {
			case 0: // Get
				got, ok := s.Get(k)
				e, wok := m.live(k)
				if ok != wok || !bytes.Equal(got, e.v) {
					fail("Get", string(got), string(e.v))
				}
			case 1: // Set
				err := s.Set(k, v, ttl)
				if ok := m.put(k, v, exp()); ok != (err == nil) {
					fail("Set", err, ok)
				}
			case 2: // SetNX
				out, err := s.SetNX(k, v, ttl)
				want := Exists
				wantErr := false
				if e, ok := m.m[k]; !ok || m.expired(e) {
					want = Inserted
					wantErr = !m.put(k, v, exp())
				}
				if wantErr != (err != nil) || (err == nil && out != want) {
					fail("SetNX", out, want)
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
				newExp := exp()
				if ok {
					// An integer is what FormatInt writes, as Redis reads it.
					n, perr := strconv.ParseInt(string(e.v), 10, 64)
					if perr != nil || strconv.FormatInt(n, 10) != string(e.v) {
						wantErr = ErrNotInteger
					}
					want, newExp = n+delta, e.exp
				} else {
					want = delta
				}
				if wantErr == nil && !m.put(k, []byte(strconv.FormatInt(want, 10)), newExp) {
					wantErr = ErrNoMemory
				}
				if !errors.Is(err, wantErr) || (wantErr == nil && got != want) {
					fail("IncrBy", []any{got, err}, []any{want, wantErr})
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
				g := "k" + strconv.Itoa(int(b%4))
				ge, gok := m.m[g]
				want := gok && !m.expired(ge) && bytes.Equal(ge.v, v)
				wantErr := false
				if want {
					wantErr = !m.put(k, v, exp())
				}
				got, err := s.SetGuarded(k, v, ttl, g, v)
				if wantErr != (err != nil) || (err == nil && got != want) {
					fail("SetGuarded", []any{got, err}, want)
				}
			case 14: // DelGuarded by key g holding v
				g := "k" + strconv.Itoa(int(b%4))
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
					m.used = 0
				}
			}
			if st := s.Stats(); st.BytesUsed != m.used || st.Keys != int64(len(m.m)) {
				t.Fatalf("step %d op %d: used %d keys %d, model %d %d", step, op, st.BytesUsed, st.Keys, m.used, len(m.m))
			}
		}
	})
}
