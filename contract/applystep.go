// A Step's decisions, written once for the engines that apply it in their
// own memory: ApplyStep decides and an engine, holding the shards of the
// step's two keys, reads and writes its entries as it is told.

package contract

// EntryState is what a key's slot holds when a step looks at it.
type EntryState uint8

const (
	// NoEntry: the key has no entry.
	NoEntry EntryState = iota
	// LapsedEntry: an entry that counts as none (expired, or whatever else
	// lapses an entry in the engine) and is not yet removed.
	LapsedEntry
	// LiveEntry: an entry that counts.
	LiveEntry
)

// StepCounts is a set of the counters a step bumps, each by one (see
// Stats): ApplyStep's answer, for its engine to add under its locks. The
// first five are counted in the shard of the step's Lock, the others in
// that of its Key.
type StepCounts uint16

const (
	CountSetNXWin StepCounts = 1 << iota
	CountSetNXLoss
	CountDelIfEqMatch
	CountDelIfEqMismatch
	// CountLockExpiration: a lapsed entry of Lock was replaced.
	CountLockExpiration
	CountSet
	// CountExpiration: a lapsed entry of Key was replaced or removed.
	CountExpiration
	CountHit
	CountMiss
)

// StepEngine is one engine's hold on a Step's two keys, its Lock and its
// Key, while ApplyStep decides the step: the engine holds the locks of
// both keys' shards around the call, so each method is atomic with the
// whole step, and reads the step's inputs (Lock, Token, LockTTL, Bound,
// Key, Value, TTL, Dst) from the Step it was made for. ApplyStep calls
// only the methods the step needs, each at most once, and PutLock and
// PutValue right after LockEntry and KeyEntry: an engine may keep what
// the lookup found for the put.
//
// LockEntry, KeyEntry and DelKey report a lapsed entry, which the put
// that follows replaces, or DelKey removes, and ApplyStep counts. The
// other methods that look for a live entry may remove a lapsed one they
// find, counting it as an expiration, as the engine's reads do. Every
// other counter a step bumps is in ApplyStep's answer.
type StepEngine interface {
	// LockEntry is the state of Lock's entry.
	LockEntry() EntryState
	// PutLock stores Lock = Token, expiring LockTTL from now (0: never),
	// as SetNX stores a lock (never evicted; held by this process if
	// Bound, where the engine can tell), in place of the entry
	// LockEntry found, which is not live. False: it does not fit, and
	// nothing changed.
	PutLock() bool
	// DropLock removes the lock PutLock just put, when the step fails:
	// Lock holds no entry after it.
	DropLock()
	// MintFence mints Lock's next fence, in the sequence SetNXFenced and
	// LockAttempt mint from, and returns it.
	MintFence() int64
	// LockHolder reports whether Lock holds a live entry (held), and
	// whether that entry equals Token (byToken).
	LockHolder() (held, byToken bool)
	// LatestFence is the fence last minted for Lock; known is false if
	// the engine knows of none.
	LatestFence() (fence int64, known bool)
	// ReleaseLock removes Lock's entry if it is live and equals Token, as
	// DelIfEq does (waking a waiter for Lock), and reports whether it
	// did.
	ReleaseLock() bool

	// KeyEntry is the state of Key's entry, and Key's kind.
	KeyEntry() (EntryState, KeyKind)
	// PutValue stores Key = Value, expiring TTL from now (0: never), as
	// Set does, in place of the entry KeyEntry found; keepRead: the new
	// entry keeps that entry's read mark (session data's: see
	// SessionRule). False: it does not fit, and nothing changed.
	PutValue(keepRead bool) bool
	// GetValue reads Key's live entry as GetInto does, into Dst if it
	// fits (the engine may finish the copy after its locks are released,
	// where the value cannot change meanwhile): n its length, found
	// whether there was one. A hit stamps the entry's access and marks
	// session data read.
	GetValue() (n int, found bool)
	// DelKey removes Key's entry, live or lapsed, and returns the state
	// it was in.
	DelKey() EntryState
	// ExpireKey gives Key's live entry the expiry TTL from now (0: none)
	// and reports whether there was one.
	ExpireKey() bool
}

// ApplyStep decides st (see Step, whose outputs it sets; st is checked
// and Reset) on e, which holds the shards of its Lock and its Key: the
// acquire or the guard, the action and the release, each in full, as
// one step. It returns the counters the step bumps, for e's engine to
// add before it releases its locks, and short, a write that did not fit:
// then nothing changed (a lock the step put is dropped again) and the
// engine makes room with its locks released and applies the step again,
// or fails it.
func ApplyStep(st *Step, e StepEngine) (n StepCounts, short bool) {
	if st.Acquire {
		old := e.LockEntry()
		if old == LiveEntry {
			st.Outcome = Exists
			return CountSetNXLoss, false
		}
		if !e.PutLock() {
			return 0, true
		}
		if old == LapsedEntry {
			n |= CountLockExpiration
		}
	} else {
		switch st.Guard {
		case GuardToken:
			if _, byToken := e.LockHolder(); !byToken {
				return 0, false
			}
		case GuardFence, GuardFenceHolder:
			if fence, known := e.LatestFence(); !known || fence != st.Fence {
				return 0, false
			}
			if st.Guard == GuardFenceHolder {
				if held, byToken := e.LockHolder(); held && !byToken {
					return 0, false
				}
			}
		}
	}

	switch st.Action {
	case ActionSet:
		old, kind := e.KeyEntry()
		if !e.PutValue(old == LiveEntry && kind == KindSession) { // the same session, rewritten
			if st.Acquire {
				e.DropLock()
			}
			return n, true // a lapsed lock is gone all the same
		}
		if old == LapsedEntry {
			n |= CountExpiration
		}
		n |= CountSet
		st.Done = true
	case ActionGet:
		st.N, st.Found = e.GetValue()
		if st.Found {
			n |= CountHit
		} else {
			n |= CountMiss
		}
		st.Done = true
	case ActionDel:
		switch e.DelKey() {
		case LiveEntry:
			st.Done = true
		case LapsedEntry:
			n |= CountExpiration
		}
	case ActionExpire:
		st.Done = e.ExpireKey()
	}

	st.Held = true
	if st.Acquire {
		if st.Fenced {
			st.Fence = e.MintFence()
		}
		st.Outcome = Inserted
		n |= CountSetNXWin
	}
	if st.Release && (st.Action != ActionExpire || st.Done) {
		if st.Released = e.ReleaseLock(); st.Released {
			n |= CountDelIfEqMatch
		} else {
			n |= CountDelIfEqMismatch
		}
	}
	return n, false
}
