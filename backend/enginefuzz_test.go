package backend_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/memstore"
	"github.com/ephpm/ephpm/shm"
)

// FuzzEngineAgainstModel checks the semantics every in-memory engine
// promises, through backend.Backend as the bridge calls it, against
// engineModel (enginefuzz_model_test.go): each input is a sequence of
// operations over 8 plain keys and 4 lock names, run on each engine in
// turn, on an empty store:
//
//   - kv: memstore through backend.Memory, a new store per input;
//   - private: shm.OpenPrivate, the shared-memory engine on a private
//     mapping (the in-process store's successor: docs/design.md, "One
//     engine or two"), one per process, flushed for each input;
//   - file: shm.Open, a segment file in /dev/shm, likewise.
//
// A difference is reported with the engine, the op's index and name and
// what it got against what the model wants; EPHPM_FUZZ_TRACE=1 prints the
// ops of an input as they run, with their bytes.
//
// EPHPM_FUZZ_ENGINES (a comma-separated list of those names) runs only
// some of them, so that each can be fuzzed on its own.
//
// Checked, exactly: every answer of Get (GetInto, a destination that fits
// or not), Set, SetNX, Del, DelIfEq, Exists, IncrBy (missing keys,
// non-integers, overflow), Expire, ExpireIfEq, Wait (no wait), Step (every
// combination of acquire, fenced or not, guard by token or fence, action
// and release, and the combinations CheckStep refuses), LockAttempt,
// LockRelease, LockRefresh and LockInfo (exclusive and shared holds, a
// writer's claim), GetMany, SetMany (and a batch refused whole), Fence
// (each new fence above every earlier one of its name; Fence reporting
// the latest), Flush (which keeps fences), a walk by Scan (keys, sizes,
// lock flags, read holds), the errors wrapping ErrInvalidArgument,
// ErrNotInteger and ErrOverflow, and that no other call fails: none is
// refused for memory (ErrNoMemory) nor with ErrNothingDone (nothing here
// has a cause outside its arguments), and nothing is evicted (Stats).
//
// Deliberately not checked: anything that needs time to pass. TTLs are 0
// or hours, so nothing lapses; PTTL is checked as present and at most the
// TTL given (a reader record's only as at most the longest TTL used), a
// writer's claim only as present or not. Nor memory accounting, limits and
// eviction, compression thresholds, sessions or waking waiters: those are
// each engine's own tests (memstore's FuzzStoreAgainstModel checks its
// accounting and eviction against a model with a fake clock). Read-only
// calls with an invalid key are not made: memstore's reads and deletes
// take any key and report it absent, where shm refuses it; the bridge
// checks keys first.
func FuzzEngineAgainstModel(f *testing.F) {
	for _, seed := range engineSeeds {
		f.Add(seed)
	}
	engines := fuzzEngines(f)
	opens := make([]func(*testing.T) (backend.Backend, func()), len(engines))
	for i, e := range engines {
		opens[i] = e.setup(f)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for i, e := range engines {
			b, done := opens[i](t)
			err := runEngineInput(b, data)
			done()
			if err != nil {
				t.Fatalf("engine %s: %v", e.name, err)
			}
		}
	})
}

// reused opens a shared-memory store once per process (each fuzzing
// worker's), and flushes it for each input: a segment takes tens of
// milliseconds to make, an input a fraction of one to run. The fences of
// earlier inputs stay (Flush keeps them), which the model reads as it
// begins. A file segment and its fences file are removed at the end.
func reused(file bool, open func() (*shm.Store, error)) func(f *testing.F) func(t *testing.T) (backend.Backend, func()) {
	return func(f *testing.F) func(t *testing.T) (backend.Backend, func()) {
		s, err := open()
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() {
			s.Close()
			if file {
				os.Remove(s.Path())
				os.Remove(s.Path() + ".fences1")
			}
		})
		return func(t *testing.T) (backend.Backend, func()) {
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			return s, func() {}
		}
	}
}

type fuzzEngine struct {
	name string
	// setup prepares the engine before the fuzzing begins, and returns
	// what opens a store for one input (and closes it).
	setup func(f *testing.F) func(t *testing.T) (b backend.Backend, done func())
}

// fuzzLimit is each store's memory: far more than an input can write
// (12 keys of at most a few hundred bytes), so nothing is evicted, and
// small enough that a segment's Flush, which visits every index slot, costs
// microseconds (64 MiB: tens of milliseconds, a few inputs a second).
const fuzzLimit = 1 << 20

// fuzzEngines sets up the engines EPHPM_FUZZ_ENGINES names (all by default).
func fuzzEngines(f *testing.F) []fuzzEngine {
	cfg := contract.MemoryConfig{Limit: fuzzLimit}
	all := []fuzzEngine{
		{"kv", func(*testing.F) func(*testing.T) (backend.Backend, func()) {
			return func(*testing.T) (backend.Backend, func()) {
				s := memstore.New(memstore.Options{Memory: cfg, SweepInterval: -1})
				return backend.Memory{Store: s}, s.Close
			}
		}},
		{"private", reused(false, func() (*shm.Store, error) { return shm.OpenPrivate(shm.Options{Memory: cfg}) })},
		{"file", reused(true, func() (*shm.Store, error) {
			return shm.Open(fmt.Sprintf("fuzz-engine-%d-%d", os.Getpid(), time.Now().UnixNano()), shm.Options{Memory: cfg})
		})},
	}
	want := os.Getenv("EPHPM_FUZZ_ENGINES")
	var es []fuzzEngine
	for _, e := range all {
		if want == "" || slices.Contains(strings.Split(want, ","), e.name) {
			es = append(es, e)
		}
	}
	if len(es) == 0 {
		f.Fatalf("EPHPM_FUZZ_ENGINES=%q names none of kv, private, file", want)
	}
	return es
}

// The key space: plain keys and lock names (any op may use any of them).
var (
	fuzzNames  = []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "L0", "L1", "L2", "L3"}
	fuzzTokens = [][]byte{[]byte("t0"), []byte("t1"), []byte("t2"), []byte("t3")}
	// fuzzValues are the values that matter to a counter or a guard;
	// other selectors make values of 0..300 bytes.
	fuzzValues = [][]byte{{}, []byte("a"), []byte("0"), []byte("7"), []byte("-3"),
		[]byte("9223372036854775807"), []byte("-9223372036854775808"), []byte("007"), []byte("-0"),
		[]byte("+1"), []byte("t0"), []byte("t1"), []byte(" 1"), []byte("99999999999999999999"), []byte("12a"), []byte("t2")}
	fuzzDeltas = []int64{1, -1, 0, 5, -7, math.MaxInt64, math.MinInt64, 1000}
)

// fuzzTrace prints each op as it runs (EPHPM_FUZZ_TRACE=1), to read a
// failing input.
var fuzzTrace = os.Getenv("EPHPM_FUZZ_TRACE") != ""

// maxFuzzTTL is the longest TTL an input gives.
const maxFuzzTTL = 3 * time.Hour

// in decodes an input: each read takes one byte, 0 once it is used up.
type in struct{ data []byte }

func (r *in) byte() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

func (r *in) key() string { return fuzzNames[int(r.byte())%len(fuzzNames)] }

// lock is mostly a lock name, sometimes any key.
func (r *in) lock() string {
	b := r.byte()
	if b < 128 {
		return fuzzNames[8+int(b)%4]
	}
	return fuzzNames[int(b)%len(fuzzNames)]
}

func (r *in) value() []byte {
	b := int(r.byte())
	if b < len(fuzzValues) {
		return fuzzValues[b]
	}
	n := (b - len(fuzzValues)) * 300 / (255 - len(fuzzValues))
	v := make([]byte, n)
	for i := range v {
		v[i] = byte('a' + (i+b)%26)
	}
	return v
}

// token is a lock token, sometimes another value (one a Set may have
// stored).
func (r *in) token() []byte {
	b := r.byte()
	if b < 200 {
		return fuzzTokens[b%4]
	}
	return fuzzValues[int(b)%len(fuzzValues)]
}

func (r *in) ttl() time.Duration { return [3]time.Duration{0, time.Hour, maxFuzzTTL}[r.byte()%3] }

// dst is a destination for a value: mostly room enough, sometimes too
// little.
func (r *in) dst() []byte {
	b := r.byte()
	if b%4 == 0 {
		return make([]byte, int(b>>2)%8)
	}
	return make([]byte, 512)
}

const numOps = 23

// runEngineInput runs one input on b, against the model, and returns the
// first difference.
func runEngineInput(b backend.Backend, data []byte) error {
	m := newModel()
	for _, k := range fuzzNames {
		n, err := b.Fence(k)
		if err != nil {
			return fmt.Errorf("Fence(%s) at start: %v", k, err)
		}
		m.fences[k] = n
	}
	r := &in{data: data}
	for i := 0; len(r.data) > 0; i++ {
		op := r.byte() % numOps
		before := r.data
		err := runOp(b, m, r, op)
		if fuzzTrace {
			fmt.Printf("op %d %s %v\n", i, opNames[op], before[:len(before)-len(r.data)])
		}
		if err != nil {
			return fmt.Errorf("op %d (%s): %w", i, opNames[op], err)
		}
	}
	st, err := b.Stats()
	if err != nil {
		return fmt.Errorf("Stats: %v", err)
	}
	if st.Keys != int64(len(m.m)) || st.Evictions != 0 {
		return fmt.Errorf("at the end: Stats %d keys, %d evictions; model %d keys, none evicted", st.Keys, st.Evictions, len(m.m))
	}
	return nil
}

var opNames = [numOps]string{"Get", "Set", "SetNX", "Del", "DelIfEq", "Exists", "IncrBy", "Expire", "PTTL", "ExpireIfEq",
	"Step", "LockAttempt", "LockRelease", "LockRefresh", "LockInfo", "GetMany", "SetMany", "Fence", "Wait", "Scan",
	"invalid", "Flush", "Step"}

// want fails unless got equals w.
func want[T comparable](what string, got, w T) error {
	if got != w {
		return fmt.Errorf("%s: got %v, want %v", what, got, w)
	}
	return nil
}

// noErr is the error to report for err from a call the model expects to
// succeed (a write refused for memory included: nothing may be).
func noErr(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: unexpected error %v", what, err)
	}
	return nil
}

func wantErr(what string, err, w error) error {
	if !errors.Is(err, w) {
		return fmt.Errorf("%s: error %v, want one wrapping %v", what, err, w)
	}
	return nil
}

func runOp(b backend.Backend, m *engineModel, r *in, op byte) error {
	switch op {
	case 0: // Get
		k, dst := r.key(), r.dst()
		n, found, err := b.GetInto(k, dst)
		if err := noErr("GetInto "+k, err); err != nil {
			return err
		}
		e, live := m.live(k)
		if found != live {
			return fmt.Errorf("GetInto %s: found %v, want %v", k, found, live)
		}
		return checkRead("GetInto "+k, dst, n, found, e)
	case 1: // Set
		k, v, ttl := r.key(), r.value(), r.ttl()
		if err := noErr("Set "+k, b.Set(k, v, ttl)); err != nil {
			return err
		}
		m.m[k] = mEntry{v: slices.Clone(v), ttl: ttl}
	case 2: // SetNX
		k, v, ttl := r.key(), r.value(), r.ttl()
		out, err := b.SetNX(k, v, ttl)
		if err := noErr("SetNX "+k, err); err != nil {
			return err
		}
		w := contract.Exists
		if _, live := m.live(k); !live {
			w = contract.Inserted
			m.m[k] = mEntry{v: slices.Clone(v), ttl: ttl, lock: true}
		}
		return want("SetNX "+k, out, w)
	case 3: // Del
		k := r.key()
		got, err := b.Del(k)
		if err := noErr("Del "+k, err); err != nil {
			return err
		}
		_, live := m.live(k)
		delete(m.m, k)
		return want("Del "+k, got, live)
	case 4: // DelIfEq
		k, v := r.key(), r.token()
		got, err := b.DelIfEq(k, v)
		if err := noErr("DelIfEq "+k, err); err != nil {
			return err
		}
		e, live := m.live(k)
		w := live && e.is(v)
		if w {
			delete(m.m, k)
		}
		return want(fmt.Sprintf("DelIfEq %s %q", k, v), got, w)
	case 5: // Exists
		k := r.key()
		got, err := b.Exists(k)
		if err := noErr("Exists "+k, err); err != nil {
			return err
		}
		_, live := m.live(k)
		return want("Exists "+k, got, live)
	case 6: // IncrBy
		k, delta, ttl := r.key(), fuzzDeltas[r.byte()%8], r.ttl()
		got, err := b.IncrBy(k, delta, ttl)
		what := fmt.Sprintf("IncrBy %s %d", k, delta)
		e, live := m.live(k)
		if !live {
			if err := noErr(what, err); err != nil {
				return err
			}
			m.m[k] = mEntry{v: []byte(fmt.Sprint(delta)), ttl: ttl}
			return want(what, got, delta)
		}
		var w int64
		var werr error = contract.ErrNotInteger
		if e.rec == nil {
			w, werr = incr(e.v, delta)
		}
		if werr != nil {
			return wantErr(fmt.Sprintf("%s on %q", what, trunc(e.v)), err, werr)
		}
		if err := noErr(what, err); err != nil {
			return err
		}
		e.v = []byte(fmt.Sprint(w))
		m.m[k] = e
		return want(what, got, w)
	case 7, 9: // Expire, ExpireIfEq
		k, ttl := r.key(), r.ttl()
		var v []byte
		var got bool
		var err error
		if op == 7 {
			got, err = b.Expire(k, ttl)
		} else {
			v = r.token()
			got, err = b.ExpireIfEq(k, v, ttl)
		}
		if err := noErr(opNames[op]+" "+k, err); err != nil {
			return err
		}
		e, live := m.live(k)
		w := live && (op == 7 || e.is(v))
		if w {
			e.ttl = ttl
			m.m[k] = e
		}
		return want(fmt.Sprintf("%s %s %q %v", opNames[op], k, v, ttl), got, w)
	case 8: // PTTL
		k := r.key()
		got, found, err := b.PTTL(k)
		if err := noErr("PTTL "+k, err); err != nil {
			return err
		}
		e, live := m.live(k)
		if found != live {
			return fmt.Errorf("PTTL %s: found %v, want %v", k, found, live)
		}
		if live {
			if err := checkPTTL(got, e); err != nil {
				return fmt.Errorf("PTTL %s: %v", k, err)
			}
		}
	case 10, 22:
		return runStep(b, m, r)
	case 11: // LockAttempt
		k := r.lock()
		tb := r.byte()
		token := fuzzTokens[tb%4]
		switch tb {
		case 254:
			token = nil
		case 255:
			token = bytes.Repeat([]byte("t"), 256)
		}
		mb := r.byte()
		mode := contract.LockMode(mb % 2)
		if mb == 255 {
			mode = 2
		}
		ttl, claim := r.ttl(), r.ttl()
		what := fmt.Sprintf("LockAttempt %s %q mode %d ttl %v claim %v", k, trunc(token), mode, ttl, claim)
		out, fence, err := b.LockAttempt(k, token, mode, ttl, claim)
		if tb >= 254 || mb == 255 {
			return wantErr(what, err, contract.ErrInvalidArgument)
		}
		wout, mints, dup := m.lockAttempt(k, token, mode, ttl, claim)
		if dup {
			return wantErr(what, err, contract.ErrInvalidArgument)
		}
		if err := noErr(what, err); err != nil {
			return err
		}
		if err := want(what+" outcome", out, wout); err != nil {
			return err
		}
		if !mints {
			return want(what+" fence", fence, 0)
		}
		if err := m.mint(k, fence); err != nil {
			return fmt.Errorf("%s: %v", what, err)
		}
	case 12: // LockRelease
		k, token := r.lock(), r.token()
		got, err := b.LockRelease(k, token)
		if err := noErr("LockRelease "+k, err); err != nil {
			return err
		}
		return want(fmt.Sprintf("LockRelease %s %q", k, token), got, m.lockRelease(k, token))
	case 13: // LockRefresh
		k, token, ttl := r.lock(), r.token(), r.ttl()
		got, err := b.LockRefresh(k, token, ttl)
		if err := noErr("LockRefresh "+k, err); err != nil {
			return err
		}
		return want(fmt.Sprintf("LockRefresh %s %q %v", k, token, ttl), got, m.lockRefresh(k, token, ttl))
	case 14: // LockInfo
		k := r.lock()
		mode, holders, err := b.LockInfo(k)
		if err := noErr("LockInfo "+k, err); err != nil {
			return err
		}
		wm, wh := m.lockInfo(k)
		if mode != wm || holders != wh {
			return fmt.Errorf("LockInfo %s: mode %d holders %d, want %d %d", k, mode, holders, wm, wh)
		}
	case 15: // GetMany
		keys := make([]string, r.byte()%5)
		for i := range keys {
			keys[i] = r.key()
		}
		dst := make([]byte, 2048)
		if c := r.byte(); c%4 == 0 {
			dst = dst[:c%32]
		}
		return checkGetMany(b, m, keys, dst)
	case 16: // SetMany
		nb := r.byte()
		keys := make([]string, nb%5)
		values := make([][]byte, len(keys))
		for i := range keys {
			keys[i], values[i] = r.key(), r.value()
		}
		ttl := r.ttl()
		bad := nb >= 240 && len(keys) > 0
		if bad {
			if nb%2 == 0 {
				keys[int(nb>>1)%len(keys)] = ""
			} else {
				values = values[1:]
			}
		}
		what := fmt.Sprintf("SetMany %q ttl %v", keys, ttl)
		stored, err := b.SetMany(keys, values, ttl)
		if bad {
			if err := wantErr(what, err, contract.ErrInvalidArgument); err != nil {
				return err
			}
			return want(what+" stored", stored, 0)
		}
		if err := noErr(what, err); err != nil {
			return err
		}
		for i, k := range keys {
			m.m[k] = mEntry{v: slices.Clone(values[i]), ttl: ttl}
		}
		return want(what+" stored", stored, len(keys))
	case 17: // Fence
		k := r.key()
		got, err := b.Fence(k)
		if err := noErr("Fence "+k, err); err != nil {
			return err
		}
		return want("Fence "+k, got, m.fences[k])
	case 18: // Wait, without waiting
		k := r.key()
		free, err := b.Wait(k, 0)
		if err := noErr("Wait "+k, err); err != nil {
			return err
		}
		_, live := m.live(k)
		return want("Wait "+k, free, !live)
	case 19:
		return checkScan(b, m, r)
	case 20:
		return runInvalid(b, m, r)
	case 21: // Flush, now and then: the entries go, the fences stay
		if r.byte()%4 != 0 {
			return nil
		}
		if err := noErr("Flush", b.Flush()); err != nil {
			return err
		}
		clear(m.m)
	}
	return nil
}

// checkRead checks a read of e into dst (zeros before the call) that
// reported length n: the value when it fitted, else dst untouched.
func checkRead(what string, dst []byte, n int, found bool, e mEntry) error {
	if !found {
		return want(what+" length", n, 0)
	}
	if err := want(what+" length", n, e.length()); err != nil {
		return err
	}
	if n > len(dst) {
		// Nothing copied: dst is as the test made it, zeros.
		if i := slices.IndexFunc(dst, func(c byte) bool { return c != 0 }); i >= 0 {
			return fmt.Errorf("%s: a %d-byte value wrote into a %d-byte destination", what, n, len(dst))
		}
		return nil
	}
	if err := checkValue(dst[:n], e); err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	return nil
}

func checkGetMany(b backend.Backend, m *engineModel, keys []string, dst []byte) error {
	what := fmt.Sprintf("GetMany %q into %d bytes", keys, len(dst))
	n, err := b.GetMany(keys, dst)
	if err := noErr(what, err); err != nil {
		return err
	}
	w := 0
	for _, k := range keys {
		w += 4
		if e, live := m.live(k); live {
			w += e.length()
		}
	}
	if err := want(what+" length", n, w); err != nil || n > len(dst) {
		return err
	}
	p := dst[:n]
	for _, k := range keys {
		l := binary.NativeEndian.Uint32(p)
		p = p[4:]
		e, live := m.live(k)
		if l == backend.Missing {
			if live {
				return fmt.Errorf("%s: %s missing, want it", what, k)
			}
			continue
		}
		if !live {
			return fmt.Errorf("%s: %s has %d bytes, want it missing", what, k, l)
		}
		if err := checkValue(p[:l], e); err != nil {
			return fmt.Errorf("%s: %s: %v", what, k, err)
		}
		p = p[l:]
	}
	return nil
}

// runStep makes one Step from the input, valid or not, and checks it.
func runStep(b backend.Backend, m *engineModel, r *in) error {
	fl := r.byte()
	st := contract.Step{
		Acquire: fl&1 != 0,
		Fenced:  fl&2 != 0,
		Release: fl&4 != 0,
		Guard:   contract.Guard(fl >> 3 & 3),
		Action:  contract.Action(fl >> 5),
	}
	switch st.Action {
	case 5:
		st.Action = contract.ActionGet
	case 6:
		st.Action = contract.ActionSet
	case 7:
		st.Action = 9 // unknown
	}
	lb := r.byte()
	st.Lock = r.lockFrom(lb)
	st.Token = r.token()
	kb := r.byte()
	st.Key = fuzzNames[int(kb)%len(fuzzNames)]
	if kb == 255 {
		st.Key = ""
	}
	if lb == 255 {
		st.Lock = ""
	}
	st.Value = r.value()
	tb := r.byte()
	st.TTL = [3]time.Duration{0, time.Hour, maxFuzzTTL}[tb%3]
	st.LockTTL = [3]time.Duration{0, time.Hour, maxFuzzTTL}[tb/3%3]
	st.Bound = tb >= 250
	fb := r.byte()
	latest := m.fences[st.Lock]
	switch fb % 8 {
	case 1:
		st.Fence = latest - 1
	case 2:
		st.Fence = latest + 1
	case 3:
		st.Fence = 0
	case 4:
		st.Fence = -5
	case 5:
		st.Fence = m.fences[fuzzNames[8+int(fb>>3)%4]]
	default:
		st.Fence = latest
	}
	st.Dst = r.dst()
	inputs := st // the inputs, for the message and the model
	inputs.Dst = nil
	what := fmt.Sprintf("Step %+v", inputs)

	// Outputs left over from an earlier use, which the step must reset.
	st.Outcome, st.Held, st.Done, st.N, st.Found, st.Released = contract.Exists, true, true, 99, true, true
	fence := st.Fence
	err := b.Step(&st)
	if stepInvalid(&inputs) {
		if err := wantErr(what, err, contract.ErrInvalidArgument); err != nil {
			return err
		}
		if st.Outcome != 0 || st.Held || st.Done || st.N != 0 || st.Found || st.Released || (st.Acquire && st.Fence != 0) {
			return fmt.Errorf("%s: refused, with outputs %+v not reset", what, st)
		}
		return nil
	}
	if err := noErr(what, err); err != nil {
		return err
	}
	w := m.step(&inputs)
	if st.Outcome != w.outcome || st.Held != w.held || st.Done != w.done || st.Found != w.found || st.N != w.n || st.Released != w.released {
		return fmt.Errorf("%s: outcome %v held %v done %v found %v n %d released %v; want %v %v %v %v %d %v", what,
			st.Outcome, st.Held, st.Done, st.Found, st.N, st.Released, w.outcome, w.held, w.done, w.found, w.n, w.released)
	}
	if w.found {
		if err := checkRead(what, st.Dst, st.N, true, w.read); err != nil {
			return err
		}
	}
	switch {
	case w.mints:
		if err := m.mint(st.Lock, st.Fence); err != nil {
			return fmt.Errorf("%s: %v", what, err)
		}
	case st.Acquire:
		return want(what+" fence", st.Fence, 0)
	default:
		return want(what+" fence (an input)", st.Fence, fence)
	}
	return nil
}

func (r *in) lockFrom(b byte) string {
	if b < 128 {
		return fuzzNames[8+int(b)%4]
	}
	return fuzzNames[int(b)%len(fuzzNames)]
}

// checkScan walks the store and compares what it lists with the model.
func checkScan(b backend.Backend, m *engineModel, r *in) error {
	sel := r.byte()
	count, locksOnly := 1+int(sel>>1)%16, sel&1 != 0
	seen := map[string]backend.KeyInfo{}
	var cursor uint64
	for pages := 0; ; pages++ {
		if pages > 1000 {
			return fmt.Errorf("Scan: no end after %d pages", pages)
		}
		page, err := b.Scan("", cursor, count, locksOnly)
		if err := noErr("Scan", err); err != nil {
			return err
		}
		if len(page.Skipped) != 0 {
			return fmt.Errorf("Scan: skipped %q", page.Skipped)
		}
		for _, ki := range page.Keys {
			seen[ki.Key] = ki
		}
		if cursor = page.Next; cursor == 0 {
			break
		}
	}
	for k, e := range m.m {
		ki, ok := seen[k]
		if locksOnly && !e.lock {
			if ok {
				return fmt.Errorf("Scan of locks listed %s, a value", k)
			}
			continue
		}
		if !ok {
			return fmt.Errorf("Scan (locks only %v) missed %s", locksOnly, k)
		}
		delete(seen, k)
		readers := 0
		if e.rec != nil {
			readers = len(e.rec.holds)
		}
		if ki.Size != int64(e.length()) || ki.Lock != e.lock || ki.Readers != readers {
			return fmt.Errorf("Scan: %s size %d lock %v readers %d; want %d %v %d", k, ki.Size, ki.Lock, ki.Readers, e.length(), e.lock, readers)
		}
		if err := checkPTTL(ki.TTL, e); err != nil {
			return fmt.Errorf("Scan: %s: %v", k, err)
		}
	}
	for k := range seen {
		return fmt.Errorf("Scan listed %s, which holds nothing", k)
	}
	st, err := b.Stats()
	if err := noErr("Stats", err); err != nil {
		return err
	}
	if st.Keys != int64(len(m.m)) || st.Evictions != 0 {
		return fmt.Errorf("Stats %d keys, %d evictions; model %d keys, none evicted", st.Keys, st.Evictions, len(m.m))
	}
	return nil
}

// runInvalid makes a call with an argument out of range: it must fail
// with ErrInvalidArgument and change nothing (what later ops check).
func runInvalid(b backend.Backend, m *engineModel, r *in) error {
	sel, k, v := r.byte(), r.key(), r.value()
	long := strings.Repeat("k", contract.MaxKeyLen+1)
	var err error
	switch sel % 9 {
	case 0:
		err = b.Set("", v, 0)
	case 1:
		err = b.Set(k, v, -time.Second)
	case 2:
		err = b.Set(k, v, contract.MaxTTL+time.Second)
	case 3:
		_, err = b.SetNX(k, v, -1)
	case 4:
		_, err = b.IncrBy(k, 1, -1)
	case 5:
		_, err = b.Expire(k, -1)
	case 6:
		_, _, err = b.LockAttempt("", fuzzTokens[0], contract.LockExclusive, 0, 0)
	case 7:
		err = b.Set(long, v, 0)
	case 8:
		_, err = b.Fence("")
	}
	return wantErr(fmt.Sprintf("invalid call %d on %s", sel%9, k), err, contract.ErrInvalidArgument)
}

// engineSeeds cover each operation (the op byte is its index in opNames,
// modulo numOps); testdata/fuzz/FuzzEngineAgainstModel holds any input
// the fuzzer found failing.
var engineSeeds = [][]byte{
	// Set k0 "7" 1h; Get k0; IncrBy k0 +5; PTTL k0; Exists k0; Del k0; Exists k0.
	{1, 0, 3, 1, 0, 0, 1, 6, 0, 3, 0, 8, 0, 5, 0, 3, 0, 5, 0},
	// IncrBy: missing k1 by MaxInt64, then +1 (overflow); Set k2 "007", IncrBy (not an integer); Set k3 "-0"; IncrBy.
	{6, 1, 5, 0, 6, 1, 0, 0, 1, 2, 7, 0, 6, 2, 0, 0, 1, 3, 8, 0, 6, 3, 1, 0},
	// SetNX k4 "t0" twice; DelIfEq k4 t1, t0; Expire k5 (missing); Set k5 big, 3h; ExpireIfEq k5 t0; Get k5 small dst; Get k5.
	{2, 4, 10, 0, 2, 4, 11, 1, 4, 4, 1, 4, 4, 0, 7, 5, 1, 1, 5, 250, 2, 9, 5, 1, 0, 0, 5, 8, 0, 5, 1},
	// LockAttempt L0 shared t0, t1 (ttl 1h); exclusive t2 with claim; shared t3 (refused: claim); LockInfo; Get; release t0, t1; LockInfo; exclusive t2.
	{11, 0, 0, 1, 1, 0, 11, 0, 1, 1, 1, 0, 11, 0, 2, 0, 0, 1, 11, 0, 3, 1, 0, 0, 14, 0, 0, 0, 1,
		12, 0, 0, 12, 0, 1, 14, 0, 11, 0, 2, 0, 0, 0, 17, 8},
	// LockAttempt exclusive L1 t0; refresh 3h; shared t1 refused; release t1 (no), t0; invalid token; duplicate read hold.
	{11, 1, 0, 0, 0, 0, 13, 1, 0, 2, 11, 1, 1, 1, 0, 0, 12, 1, 1, 12, 1, 0, 11, 1, 254, 0, 0, 0,
		11, 2, 0, 1, 0, 0, 11, 2, 0, 1, 0, 0},
	// Steps: fenced acquire L0 t0 with Set k0; SetFenced (fence: latest) k1; GuardToken Get k0 and release; acquire with Key==Lock (refused).
	{10, 1 | 2 | 2<<5, 0, 0, 0, 3, 1, 0, 1,
		10, 2<<3 | 2<<5, 0, 0, 1, 4, 0, 0, 1,
		10, 4 | 1<<3 | 1<<5, 0, 0, 0, 0, 0, 0, 1,
		10, 1 | 1<<5, 0, 0, 8, 0, 0, 0, 1, 17, 8},
	// Steps: GuardFenceHolder Del; ExpireGuardedRelease on a missing key; Fenced without acquire (refused); a fence guard with fence 0 (refused).
	{22, 1 | 2, 1, 1, 0, 0, 0, 0, 1,
		22, 3<<3 | 3<<5, 1, 1, 2, 0, 0, 0, 1,
		22, 4 | 1<<3 | 4<<5, 1, 1, 5, 0, 1, 0, 1,
		22, 2 | 2<<5, 1, 1, 2, 0, 0, 0, 1,
		22, 2<<3 | 2<<5, 1, 1, 2, 0, 0, 3, 1},
	// SetMany 3 entries; GetMany 4 keys; GetMany into a small dst; SetMany with an empty key (refused); Scan; Wait; Flush; Fence L0; Scan.
	{16, 3, 0, 3, 1, 4, 2, 200, 1, 15, 4, 0, 1, 2, 3, 1, 15, 2, 0, 1, 4,
		16, 242, 0, 1, 1, 2, 0, 19, 4, 18, 0, 18, 5, 21, 0, 17, 8, 19, 1},
	// Invalid calls of every kind, then a Set that must still work.
	{20, 0, 0, 1, 20, 1, 0, 1, 20, 2, 0, 1, 20, 3, 0, 1, 20, 4, 0, 1, 20, 5, 0, 1, 20, 6, 0, 1, 20, 7, 0, 1, 20, 8, 0, 1,
		1, 0, 1, 0, 0, 0, 1},
}
