package backend_test

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// engineModel is the logical state every in-memory engine promises, as
// FuzzEngineAgainstModel sees it through backend.Backend: each key's value
// (or read holds), its TTL as an upper bound on what PTTL may report,
// whether it is kept as a lock, and each lock name's latest fence. It
// predicts every answer of the operations the fuzz test makes, written
// plainly here rather than with the engines' own helpers (contract's
// Decide functions), so that it checks them.
//
// Time does not pass for the model: every TTL the test gives is 0 (none)
// or hours long, so nothing lapses during an input, and an absolute
// deadline (PTTL's figure, a reader record's deadlines) is checked only
// as "present, and no later than the TTL given". Nothing is ever evicted
// either: the stores are far larger than anything an input writes, so a
// write refused for memory is a failure.
type engineModel struct {
	m map[string]mEntry
	// fences is each name's latest fence as the engine reported it (or as
	// Fence read it when the input began: the fence sequence outlives
	// Flush and, for a reused store, earlier inputs).
	fences map[string]int64
}

// mEntry is one live entry.
type mEntry struct {
	v    []byte        // the value, when rec is nil
	rec  *mRecord      // a reader record (lock_acquire's shared holds)
	ttl  time.Duration // 0: no expiry; else PTTL is at most this
	lock bool          // kept as a lock (SetNX, an acquire): Scan's KeyInfo.Lock
}

// mRecord is a reader record as the model sees it: its holds in order and
// whether a writer's claim stands, with the TTLs that bound their deadlines.
type mRecord struct {
	claim time.Duration // 0: no claim (a claim's deadline is never 0)
	holds []mHold
}

type mHold struct {
	token string
	ttl   time.Duration // 0: no deadline
}

// readerMagicLen is the length of a reader record's fixed prefix
// (contract's readerMagic) and claim.
const readerMagicLen = len("\x00ephpm-readers\x01") + 8

// size is the record's encoded length, which GetInto reports.
func (r *mRecord) size() int {
	n := readerMagicLen
	for _, h := range r.holds {
		n += 1 + len(h.token) + 8
	}
	return n
}

// expiry is the entry TTL the record's writes give it: none if a hold has
// no deadline, else the latest of its deadlines (bounded by the longest
// TTL).
func (r *mRecord) expiry() time.Duration {
	d := r.claim
	for _, h := range r.holds {
		if h.ttl == 0 {
			return 0
		}
		d = max(d, h.ttl)
	}
	return d
}

func (r *mRecord) find(token []byte) int {
	return slices.IndexFunc(r.holds, func(h mHold) bool { return h.token == string(token) })
}

func (r *mRecord) clone() *mRecord {
	return &mRecord{claim: r.claim, holds: slices.Clone(r.holds)}
}

func newModel() *engineModel {
	return &engineModel{m: map[string]mEntry{}, fences: map[string]int64{}}
}

func (m *engineModel) live(k string) (mEntry, bool) { e, ok := m.m[k]; return e, ok }

// length is what GetInto reports for e.
func (e mEntry) length() int {
	if e.rec != nil {
		return e.rec.size()
	}
	return len(e.v)
}

// is reports whether e is a plain value equal to v (a reader record never
// equals a token the test uses: none begins with a NUL byte).
func (e mEntry) is(v []byte) bool { return e.rec == nil && bytes.Equal(e.v, v) }

// checkValue compares a value read from the store with e: byte for byte,
// or for a reader record, its holds' tokens in order and which deadlines
// and claim are set.
func checkValue(got []byte, e mEntry) error {
	if e.rec == nil {
		if !bytes.Equal(got, e.v) {
			return fmt.Errorf("value %q, want %q", trunc(got), trunc(e.v))
		}
		return nil
	}
	r, err := contract.ParseReaderRecord(got)
	if err != nil {
		return fmt.Errorf("reader record %q: %v", trunc(got), err)
	}
	if (r.Claim != 0) != (e.rec.claim != 0) || len(r.Holds) != len(e.rec.holds) {
		return fmt.Errorf("reader record with claim %d and %d holds, want claim %v and %d holds", r.Claim, len(r.Holds), e.rec.claim, len(e.rec.holds))
	}
	for i, h := range r.Holds {
		w := e.rec.holds[i]
		if string(h.Token) != w.token || (h.Deadline != 0) != (w.ttl != 0) {
			return fmt.Errorf("read hold %d: token %q deadline %d, want %q ttl %v", i, h.Token, h.Deadline, w.token, w.ttl)
		}
	}
	return nil
}

func trunc(v []byte) []byte {
	if len(v) > 40 {
		return v[:40]
	}
	return v
}

// checkPTTL checks PTTL's answer against e: -1 for no TTL, else positive
// and at most the TTL given. A reader record's TTL is the latest of its
// deadlines, or none, and whether a refused exclusive attempt rewrote it
// depends on the clock's tick; so for one it is only bounded by the
// longest TTL the test uses.
func checkPTTL(got time.Duration, e mEntry) error {
	if e.rec != nil {
		if got == -1 || (got > 0 && got <= maxFuzzTTL) {
			return nil
		}
		return fmt.Errorf("PTTL of a reader record %v, want -1 or in (0, %v]", got, maxFuzzTTL)
	}
	if e.ttl == 0 {
		if got != -1 {
			return fmt.Errorf("PTTL %v, want -1 (none)", got)
		}
		return nil
	}
	if got <= 0 || got > e.ttl {
		return fmt.Errorf("PTTL %v, want in (0, %v]", got, e.ttl)
	}
	return nil
}

// incr is IncrBy's rule: the counter v plus delta, or ErrNotInteger for a
// value that is not exactly what strconv.FormatInt writes (Redis's
// string2ll), or ErrOverflow.
func incr(v []byte, delta int64) (int64, error) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != string(v) {
		return 0, contract.ErrNotInteger
	}
	if (delta > 0 && n > math.MaxInt64-delta) || (delta < 0 && n < math.MinInt64-delta) {
		return 0, contract.ErrOverflow
	}
	return n + delta, nil
}

// mint checks a fence an engine minted for name: greater than every
// earlier one, and records it.
func (m *engineModel) mint(name string, got int64) error {
	if prev := m.fences[name]; got <= prev {
		return fmt.Errorf("fence %d minted for %s is not above the latest %d", got, name, prev)
	}
	m.fences[name] = got
	return nil
}

// stepInvalid is whether a Step's inputs are ones the contract refuses
// (contract.Step's combinations; the keys and values the test makes are
// all within the limits but the empty key it sometimes gives).
func stepInvalid(st *contract.Step) bool {
	if st.Action > contract.ActionExpire {
		return true
	}
	if st.Action != contract.ActionNone && st.Key == "" {
		return true
	}
	uses := st.Acquire || st.Guard != contract.GuardNone || st.Release
	if !uses {
		return st.Fenced || st.Bound
	}
	if st.Lock == "" {
		return true
	}
	if st.Acquire {
		return st.Guard != contract.GuardNone || st.Release || (st.Action != contract.ActionNone && st.Key == st.Lock)
	}
	if st.Fenced || st.Bound {
		return true
	}
	return (st.Guard == contract.GuardFence || st.Guard == contract.GuardFenceHolder) && st.Fence <= 0 ||
		st.Guard > contract.GuardFenceHolder
}

// stepWant is what the model predicts of a valid Step: its outputs, and
// the fence to check if it mints one. It applies the step to the model.
type stepWant struct {
	outcome           contract.SetNXOutcome
	held, done, found bool
	n                 int
	released, mints   bool
	read              mEntry // ActionGet's entry, when found
}

func (m *engineModel) step(st *contract.Step) stepWant {
	var w stepWant
	uses := st.Acquire || st.Guard != contract.GuardNone || st.Release
	if !uses && st.Action == contract.ActionNone {
		w.held = true
		return w
	}
	le, llive := m.live(st.Lock)
	switch {
	case st.Acquire:
		if llive {
			w.outcome = contract.Exists
			return w
		}
		w.outcome = contract.Inserted
		m.m[st.Lock] = mEntry{v: slices.Clone(st.Token), ttl: st.LockTTL, lock: true}
		w.mints = st.Fenced
	case st.Guard == contract.GuardToken:
		if !llive || !le.is(st.Token) {
			return w
		}
	case st.Guard == contract.GuardFence || st.Guard == contract.GuardFenceHolder:
		f, known := m.fences[st.Lock]
		if !known || f == 0 || f != st.Fence {
			return w
		}
		if st.Guard == contract.GuardFenceHolder && llive && !le.is(st.Token) {
			return w
		}
	}
	w.held = true
	e, live := m.live(st.Key)
	switch st.Action {
	case contract.ActionGet:
		w.done, w.found = true, live
		if live {
			w.n, w.read = e.length(), e
		}
	case contract.ActionSet:
		w.done = true
		m.m[st.Key] = mEntry{v: slices.Clone(st.Value), ttl: st.TTL}
	case contract.ActionDel:
		w.done = live
		delete(m.m, st.Key)
	case contract.ActionExpire:
		w.done = live
		if live {
			e.ttl = st.TTL
			m.m[st.Key] = e
		}
	}
	if st.Release && (st.Action != contract.ActionExpire || w.done) {
		if le, ok := m.live(st.Lock); ok && le.is(st.Token) {
			delete(m.m, st.Lock)
			w.released = true
		}
	}
	return w
}

// lockAttempt applies lock_acquire's rules (contract.DecideAcquire, with
// nothing lapsing) and returns the outcome, whether a fence is minted and
// whether the engine must refuse it as a token already holding the name.
func (m *engineModel) lockAttempt(k string, token []byte, mode contract.LockMode, ttl, claim time.Duration) (out contract.SetNXOutcome, mints, dup bool) {
	e, live := m.live(k)
	grantExclusive := func() (contract.SetNXOutcome, bool, bool) {
		m.m[k] = mEntry{v: slices.Clone(token), ttl: ttl, lock: true}
		return contract.Inserted, true, false
	}
	if !live {
		if mode == contract.LockExclusive {
			return grantExclusive()
		}
		r := &mRecord{holds: []mHold{{string(token), ttl}}}
		m.m[k] = mEntry{rec: r, ttl: r.expiry(), lock: true}
		return contract.Inserted, true, false
	}
	if e.rec == nil {
		return contract.Exists, false, false
	}
	r := e.rec.clone()
	if mode == contract.LockExclusive {
		if len(r.holds) == 0 {
			return grantExclusive()
		}
		if claim != 0 {
			// Whether this claim outlasts the standing one is the clock's
			// business; the model keeps the longest TTL as the bound.
			r.claim = max(r.claim, claim)
			m.m[k] = mEntry{rec: r, ttl: r.expiry(), lock: true}
		}
		return contract.Exists, false, false
	}
	if r.claim != 0 {
		return contract.Exists, false, false
	}
	if r.find(token) >= 0 {
		return 0, false, true
	}
	r.holds = append(r.holds, mHold{string(token), ttl})
	m.m[k] = mEntry{rec: r, ttl: r.expiry(), lock: true}
	return contract.Inserted, true, false
}

// lockRelease applies lock_release (contract.DecideRelease).
func (m *engineModel) lockRelease(k string, token []byte) bool {
	e, live := m.live(k)
	switch {
	case !live:
		return false
	case e.rec == nil:
		if !bytes.Equal(e.v, token) {
			return false
		}
		delete(m.m, k)
		return true
	}
	r := e.rec.clone()
	i := r.find(token)
	if i < 0 {
		return false
	}
	r.holds = slices.Delete(r.holds, i, i+1)
	if len(r.holds) == 0 && r.claim == 0 {
		delete(m.m, k)
	} else {
		m.m[k] = mEntry{rec: r, ttl: r.expiry(), lock: true}
	}
	return true
}

// lockRefresh applies lock_refresh (contract.DecideRefresh).
func (m *engineModel) lockRefresh(k string, token []byte, ttl time.Duration) bool {
	e, live := m.live(k)
	switch {
	case !live:
		return false
	case e.rec == nil:
		if !bytes.Equal(e.v, token) {
			return false
		}
		// The refreshed hold is stored as a lock, whatever stored it.
		e.ttl, e.lock = ttl, true
		m.m[k] = e
		return true
	}
	r := e.rec.clone()
	i := r.find(token)
	if i < 0 {
		return false
	}
	r.holds[i].ttl = ttl
	m.m[k] = mEntry{rec: r, ttl: r.expiry(), lock: true}
	return true
}

// lockInfo is contract.LockHolders of k.
func (m *engineModel) lockInfo(k string) (contract.LockMode, int) {
	e, live := m.live(k)
	switch {
	case !live:
		return contract.LockExclusive, 0
	case e.rec == nil:
		return contract.LockExclusive, 1
	case len(e.rec.holds) == 0:
		return contract.LockExclusive, 0
	}
	return contract.LockShared, len(e.rec.holds)
}
