package contract

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// fakeEngine is a StepEngine over two keys' states, recording the calls
// ApplyStep makes in order.
type fakeEngine struct {
	lock, key  EntryState
	byToken    bool // the lock's live entry equals Token
	fence      int64
	fenceKnown bool
	kind       KeyKind
	lockFits   bool
	valueFits  bool
	keepRead   bool // what PutValue was told
	calls      []string
}

func (f *fakeEngine) call(name string) { f.calls = append(f.calls, name) }

func (f *fakeEngine) LockEntry() EntryState { f.call("LockEntry"); return f.lock }
func (f *fakeEngine) PutLock() bool {
	f.call("PutLock")
	if f.lockFits {
		f.lock, f.byToken = LiveEntry, true
	}
	return f.lockFits
}
func (f *fakeEngine) DropLock()        { f.call("DropLock"); f.lock = NoEntry }
func (f *fakeEngine) MintFence() int64 { f.call("MintFence"); f.fence++; return f.fence }
func (f *fakeEngine) LockHolder() (bool, bool) {
	f.call("LockHolder")
	return f.lock == LiveEntry, f.lock == LiveEntry && f.byToken
}
func (f *fakeEngine) LatestFence() (int64, bool) { f.call("LatestFence"); return f.fence, f.fenceKnown }
func (f *fakeEngine) ReleaseLock() bool {
	f.call("ReleaseLock")
	if f.lock == LiveEntry && f.byToken {
		f.lock = NoEntry
		return true
	}
	return false
}
func (f *fakeEngine) KeyEntry() (EntryState, KeyKind) { f.call("KeyEntry"); return f.key, f.kind }
func (f *fakeEngine) PutValue(keepRead bool) bool {
	f.call("PutValue")
	f.keepRead = keepRead
	if f.valueFits {
		f.key = LiveEntry
	}
	return f.valueFits
}
func (f *fakeEngine) GetValue() (int, bool) {
	f.call("GetValue")
	if f.key != LiveEntry {
		return 0, false
	}
	return 7, true
}
func (f *fakeEngine) DelKey() EntryState { f.call("DelKey"); s := f.key; f.key = NoEntry; return s }
func (f *fakeEngine) ExpireKey() bool    { f.call("ExpireKey"); return f.key == LiveEntry }

// TestApplyStepDecides runs each kind of step on the fake engine: the
// calls it makes, in order, the outputs and the counters.
func TestApplyStepDecides(t *testing.T) {
	for _, c := range []struct {
		name  string
		st    Step
		e     fakeEngine
		calls string
		out   string // Outcome Held Done N Found Released Fence
		n     StepCounts
		short bool
	}{
		{"acquire+get, lock free, key there", Step{Acquire: true, Action: ActionGet},
			fakeEngine{key: LiveEntry, lockFits: true},
			"LockEntry PutLock GetValue", "inserted held done 7 found -", CountSetNXWin | CountHit, false},
		{"acquire+get, lock held", Step{Acquire: true, Action: ActionGet},
			fakeEngine{lock: LiveEntry, key: LiveEntry},
			"LockEntry", "exists - - 0 - -", CountSetNXLoss, false},
		{"fenced acquire over a lapsed lock", Step{Acquire: true, Fenced: true},
			fakeEngine{lock: LapsedEntry, lockFits: true, fence: 4},
			"LockEntry PutLock MintFence", "inserted held - 0 - - fence=5", CountSetNXWin | CountLockExpiration, false},
		{"acquire whose lock does not fit", Step{Acquire: true, Action: ActionSet},
			fakeEngine{},
			"LockEntry PutLock", "0 - - 0 - -", 0, true},
		{"acquire+set whose value does not fit: the lock goes again", Step{Acquire: true, Action: ActionSet},
			fakeEngine{lock: LapsedEntry, lockFits: true},
			"LockEntry PutLock KeyEntry PutValue DropLock", "0 - - 0 - -", CountLockExpiration, true},
		{"guarded set+release of a session rewritten", Step{Guard: GuardToken, Action: ActionSet, Release: true},
			fakeEngine{lock: LiveEntry, byToken: true, key: LiveEntry, kind: KindSession, valueFits: true},
			"LockHolder KeyEntry PutValue ReleaseLock", "0 held done 0 - released", CountSet | CountDelIfEqMatch, false},
		{"guard by another token", Step{Guard: GuardToken, Action: ActionSet, Release: true},
			fakeEngine{lock: LiveEntry, key: LiveEntry, valueFits: true},
			"LockHolder", "0 - - 0 - -", 0, false},
		{"set over a lapsed entry, release of a lock not held", Step{Action: ActionSet, Release: true},
			fakeEngine{key: LapsedEntry, valueFits: true},
			"KeyEntry PutValue ReleaseLock", "0 held done 0 - -", CountSet | CountExpiration | CountDelIfEqMismatch, false},
		{"expire not done releases nothing", Step{Guard: GuardToken, Action: ActionExpire, Release: true},
			fakeEngine{lock: LiveEntry, byToken: true},
			"LockHolder ExpireKey", "0 held - 0 - -", 0, false},
		{"expire done releases", Step{Guard: GuardToken, Action: ActionExpire, Release: true},
			fakeEngine{lock: LiveEntry, byToken: true, key: LiveEntry},
			"LockHolder ExpireKey ReleaseLock", "0 held done 0 - released", CountDelIfEqMatch, false},
		{"fence guard, a later grant", Step{Guard: GuardFence, Fence: 3, Action: ActionDel},
			fakeEngine{fence: 4, fenceKnown: true, key: LiveEntry},
			"LatestFence", "0 - - 0 - -", 0, false},
		{"fence guard, fence unknown", Step{Guard: GuardFence, Fence: 3, Action: ActionDel},
			fakeEngine{key: LiveEntry},
			"LatestFence", "0 - - 0 - -", 0, false},
		{"fence guard holds, del of a lapsed entry", Step{Guard: GuardFence, Fence: 3, Action: ActionDel},
			fakeEngine{fence: 3, fenceKnown: true, key: LapsedEntry},
			"LatestFence DelKey", "0 held - 0 - -", CountExpiration, false},
		{"fence+holder guard, held by another", Step{Guard: GuardFenceHolder, Fence: 3, Action: ActionDel},
			fakeEngine{fence: 3, fenceKnown: true, lock: LiveEntry, key: LiveEntry},
			"LatestFence LockHolder", "0 - - 0 - -", 0, false},
		{"fence+holder guard, lock free", Step{Guard: GuardFenceHolder, Fence: 3, Action: ActionGet},
			fakeEngine{fence: 3, fenceKnown: true},
			"LatestFence LockHolder GetValue", "0 held done 0 - -", CountMiss, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, e := c.st, c.e
			st.Reset()
			n, short := ApplyStep(&st, &e)
			assert.Equal(t, c.calls, strings.Join(e.calls, " "))
			assert.Equal(t, c.out, stepOutputs(&st))
			assert.Equal(t, c.n, n)
			assert.Equal(t, c.short, short)
		})
	}
}

// TestApplyStepKeepsReadMarkOfLiveSessionOnly: a rewrite keeps the read
// mark of a live session data entry, and of nothing else.
func TestApplyStepKeepsReadMarkOfLiveSessionOnly(t *testing.T) {
	for _, c := range []struct {
		old  EntryState
		kind KeyKind
		keep bool
	}{
		{LiveEntry, KindSession, true},
		{LapsedEntry, KindSession, false},
		{NoEntry, KindSession, false},
		{LiveEntry, KindPlain, false},
		{LiveEntry, KindSessionLock, false},
	} {
		st := Step{Action: ActionSet}
		st.Reset()
		e := fakeEngine{key: c.old, kind: c.kind, valueFits: true}
		ApplyStep(&st, &e)
		assert.Equal(t, c.keep, e.keepRead, "old %d kind %d", c.old, c.kind)
	}
}

func stepOutputs(st *Step) string {
	flag := func(b bool, s string) string {
		if b {
			return s
		}
		return "-"
	}
	out := fmt.Sprint(st.Outcome)
	if st.Outcome == 0 {
		out = "0"
	}
	s := fmt.Sprintf("%s %s %s %d %s %s", out, flag(st.Held, "held"), flag(st.Done, "done"), st.N,
		flag(st.Found, "found"), flag(st.Released, "released"))
	if st.Acquire && st.Fence != 0 {
		s += fmt.Sprintf(" fence=%d", st.Fence)
	}
	return s
}
