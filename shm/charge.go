// What an entry is charged against the memory limit, and the shard figures
// that add those charges up: the bytes used, session data's, and each
// eviction class's.

package shm

import (
	"sync/atomic"

	"github.com/ephpm/ephpm/contract"
)

// entryOverhead is what each entry is charged beyond its block: its index
// slot.
const entryOverhead = 8

func chargeOf(size int64) int64 { return size + entryOverhead }

// account adds (sign 1) or takes away (sign -1) the live entry b's charge
// to the shard's figures: the bytes used, session data's, and those of
// b's eviction class; kind is the kind of b's key. Caller holds the lock.
func (sh *shard) account(b int64, kind contract.KeyKind, sign int64) {
	c := sign * chargeOf(sh.blockSize(b))
	p := sh.used()
	storeDerivedI64(p, atomic.LoadInt64(p)+c)
	sh.spendCredit(c)
	cl, session := sh.classOfKind(b, kind)
	if session {
		sh.addI64(sSessUsed, c)
	}
	sh.tallyClass(b, cl, c)
}

// reaccount moves the figures of old, the live entry b replaces, to b:
// what account(old, -1) and then account(b, 1) would leave, with one store
// per figure that changes and none for those that do not (a same-size
// overwrite changes none: the bytes used are words other shards' writers
// read); kind is the kind of their key. Every figure is derived, and
// recovery recounts them. Caller holds the lock.
//
// A rewrite of a key that is not session data, to a block of the same
// size, as pinned as before and with a TTL or not as before (a cache
// key's or a lock's rewrite) changes no figure: its class, kept or plain,
// hangs on the pinned flag alone. It is told from the two entries' words
// with no class worked out (the most frequent write: see
// docs/measurements.md, 2026-12-05).
func (sh *shard) reaccount(old, b int64, kind contract.KeyKind) {
	co, cb := chargeOf(sh.blockSize(old)), chargeOf(sh.blockSize(b))
	if co == cb && kind != contract.KindSession && (sh.entryMeta(old)^sh.entryMeta(b))&flagPinned == 0 &&
		(sh.entryExpireAt(old) != 0) == (sh.entryExpireAt(b) != 0) {
		return
	}
	clo, session := sh.classOfKind(old, kind) // the same key, of kind
	clb, _ := sh.classOfKind(b, kind)
	d := cb - co
	if d != 0 {
		p := sh.used()
		storeDerivedI64(p, atomic.LoadInt64(p)+d)
		sh.spendCredit(d)
		if session {
			sh.addI64(sSessUsed, d)
		}
	}
	switch {
	case clo != clb || (sh.entryExpireAt(old) != 0) != (sh.entryExpireAt(b) != 0):
		sh.tallyClass(old, clo, -co)
		sh.tallyClass(b, clb, cb)
	case d != 0:
		sh.tallyClass(b, clb, d)
	}
}
