package contract

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Read/write locks (the lock_* members of include/ephpm_kv.h).
//
// A name is free, held exclusively, or held for reading. Held exclusively,
// it holds the holder's token as a plain entry, exactly as set_nx leaves it
// (get returns the token, del_if_eq releases it). Held for reading, it
// holds a reader record: the encoding below, with one hold per reader (its
// token and its own deadline) and, while a writer waits for the readers to
// leave, that writer's claim, which refuses new readers so that a stream
// of readers never starves a writer. The record's entry lives until the
// latest of its deadlines; a lapsed hold or claim counts as absent.
//
// The functions here decide; a store applies a decision in one atomic step
// under its own lock (memstore: the shard's mutex; shm: the shard's lock word),
// so every store keeps the same rules. A Redis server keeps the same rules
// in its scripts.

// LockMode is how a lock_acquire call wants its name: EPHPM_KV_LOCK_*.
type LockMode int

const (
	// LockExclusive: one holder, and no readers.
	LockExclusive LockMode = 0
	// LockShared: any number of readers, and no exclusive holder.
	LockShared LockMode = 1
)

// WriterClaim is how long a refused exclusive attempt's claim refuses new
// readers: longer than the longest pause between a waiter's attempts (the
// backoff cap, 100 ms), so that a live waiter renews it before it lapses,
// and short enough that a waiter whose process died holds readers up only
// briefly. A store caps it at the call's remaining wait.
const WriterClaim = 250 * time.Millisecond

// MaxReadHolds is the most read holds one name keeps; a shared attempt on
// a name that has them all fails with ErrNoMemory.
const MaxReadHolds = 10000

// readerMagic begins every reader record. It begins with a NUL byte, which
// no token ephpm draws holds, so no lock token equals a record.
var readerMagic = []byte("\x00ephpm-readers\x01")

// A reader record is readerMagic, the claim's deadline (int64, little
// endian, 0: no claim), then each hold: its token's length (one byte,
// 1..255), the token, and its deadline (int64, little endian, 0: none).
// Deadlines are in the store's clock (nanoseconds; memstore.Options.Now).

// ReadHold is one reader's hold of a name.
type ReadHold struct {
	Token    []byte
	Deadline int64 // 0: no expiry
}

// ReaderRecord is a decoded reader record.
type ReaderRecord struct {
	Claim int64 // until when a waiting writer's claim refuses readers; 0: none
	Holds []ReadHold
}

// IsReaderRecord reports whether v is a reader record (it begins with the
// record's magic).
func IsReaderRecord(v []byte) bool { return bytes.HasPrefix(v, readerMagic) }

// The errors of ParseReaderRecord, made once: every release or refresh of
// an exclusive hold parses its token first.
var (
	errNotReaderRecord       = errors.New("kv: not a reader record")
	errTruncatedReaderRecord = errors.New("kv: truncated reader record")
)

// ParseReaderRecord decodes v. An error means v begins like a record but is
// not one (a store holds only records it encoded, so this is corruption or
// a user's set of such bytes); callers treat such a name as held
// exclusively, which refuses readers and changes nothing.
func ParseReaderRecord(v []byte) (ReaderRecord, error) {
	var r ReaderRecord
	if !IsReaderRecord(v) || len(v) < len(readerMagic)+8 {
		return r, errNotReaderRecord
	}
	p := v[len(readerMagic):]
	r.Claim = int64(binary.LittleEndian.Uint64(p))
	p = p[8:]
	for len(p) > 0 {
		n := int(p[0])
		if n == 0 || len(p) < 1+n+8 {
			return ReaderRecord{}, errTruncatedReaderRecord
		}
		r.Holds = append(r.Holds, ReadHold{
			Token:    p[1 : 1+n],
			Deadline: int64(binary.LittleEndian.Uint64(p[1+n:])),
		})
		p = p[1+n+8:]
	}
	return r, nil
}

// AppendTo appends r's encoding to dst.
func (r ReaderRecord) AppendTo(dst []byte) []byte {
	dst = append(dst, readerMagic...)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.Claim))
	for _, h := range r.Holds {
		dst = append(dst, byte(len(h.Token)))
		dst = append(dst, h.Token...)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(h.Deadline))
	}
	return dst
}

func lapsed(deadline, now int64) bool { return deadline != 0 && deadline <= now }

// prune drops the holds and the claim that have lapsed by now.
func (r *ReaderRecord) prune(now int64) {
	if lapsed(r.Claim, now) {
		r.Claim = 0
	}
	kept := r.Holds[:0]
	for _, h := range r.Holds {
		if !lapsed(h.Deadline, now) {
			kept = append(kept, h)
		}
	}
	r.Holds = kept
}

// expireAt is when the record's entry lapses: the latest of its deadlines,
// or 0 (never) if a hold has none.
func (r ReaderRecord) expireAt() int64 {
	at := r.Claim
	for _, h := range r.Holds {
		if h.Deadline == 0 {
			return 0
		}
		at = max(at, h.Deadline)
	}
	return at
}

func (r ReaderRecord) find(token []byte) int {
	for i, h := range r.Holds {
		if bytes.Equal(h.Token, token) {
			return i
		}
	}
	return -1
}

// CheckLockToken rejects a token a read hold cannot keep: 1..255 bytes.
func CheckLockToken(token []byte) error {
	if len(token) == 0 || len(token) > 255 {
		return fmt.Errorf("%w: a lock token is 1..255 bytes, not %d", ErrInvalidArgument, len(token))
	}
	return nil
}

// LockWrite is what a decision asks the store to do with the name's entry,
// in the same atomic step as the decision.
type LockWrite int

const (
	LockKeep   LockWrite = iota // leave the entry as it is
	LockStore                   // store Value, lapsing at ExpireAt (0: never), as a lock (never evicted)
	LockRemove                  // remove the entry
)

// LockWake is whom a decision asks the store to wake among the name's
// waiters once the step is done.
type LockWake int

const (
	WakeNone LockWake = iota
	WakeOne           // the oldest waiter: it may now be granted
	WakeAll           // every waiter: a writer whose claim now stands alone must wake wherever it is in line
)

// LockDecision is the outcome of one decision.
type LockDecision struct {
	Granted  bool // acquire: the name is the caller's; release, refresh: the token held it
	Write    LockWrite
	Value    []byte
	ExpireAt int64
	Wake     LockWake
}

// DecideAcquire decides one lock_acquire attempt for token in mode, given
// the name's current value (live false: no live entry), the hold's
// deadline (0: none) and, for an exclusive attempt refused by readers, the
// claim's deadline to set (0: set none). A grant mints a fence in the same
// step (the store's job). A shared grant wakes the next waiter, so that a
// run of waiting readers enter one after another in arrival order.
func DecideAcquire(old []byte, live bool, mode LockMode, token []byte, deadline, claimUntil, now int64) (LockDecision, error) {
	if !live {
		if mode == LockExclusive {
			return LockDecision{Granted: true, Write: LockStore, Value: token, ExpireAt: deadline}, nil
		}
		r := ReaderRecord{Holds: []ReadHold{{Token: token, Deadline: deadline}}}
		return LockDecision{Granted: true, Write: LockStore, Value: r.AppendTo(nil), ExpireAt: r.expireAt(), Wake: WakeOne}, nil
	}
	r, err := ParseReaderRecord(old)
	if err != nil {
		return LockDecision{}, nil // held exclusively (or not a lock at all): refused
	}
	r.prune(now)
	if mode == LockExclusive {
		if len(r.Holds) == 0 {
			return LockDecision{Granted: true, Write: LockStore, Value: token, ExpireAt: deadline}, nil
		}
		if claimUntil == 0 || claimUntil <= r.Claim {
			return LockDecision{}, nil
		}
		r.Claim = claimUntil
		return LockDecision{Write: LockStore, Value: r.AppendTo(nil), ExpireAt: r.expireAt()}, nil
	}
	if r.Claim != 0 {
		return LockDecision{}, nil
	}
	if r.find(token) >= 0 {
		return LockDecision{}, fmt.Errorf("%w: this token already holds the name for reading", ErrInvalidArgument)
	}
	if len(r.Holds) >= MaxReadHolds {
		return LockDecision{}, fmt.Errorf("%w: the name has %d read holds, the most one name keeps", ErrNoMemory, MaxReadHolds)
	}
	r.Holds = append(r.Holds, ReadHold{Token: token, Deadline: deadline})
	return LockDecision{Granted: true, Write: LockStore, Value: r.AppendTo(nil), ExpireAt: r.expireAt(), Wake: WakeOne}, nil
}

// DecideRelease decides lock_release of token: the exclusive entry equal
// to token, or token's read hold. Granted reports whether token held the
// name. The last reader's release removes the record, or leaves a waiting
// writer's claim alone in it and wakes every waiter so that the writer
// wakes wherever it stands in line.
func DecideRelease(old []byte, live bool, token []byte, now int64) LockDecision {
	if !live {
		return LockDecision{}
	}
	r, err := ParseReaderRecord(old)
	if err != nil {
		if bytes.Equal(old, token) {
			return LockDecision{Granted: true, Write: LockRemove, Wake: WakeOne}
		}
		return LockDecision{}
	}
	r.prune(now)
	i := r.find(token)
	if i < 0 {
		return LockDecision{}
	}
	r.Holds = append(r.Holds[:i], r.Holds[i+1:]...)
	switch {
	case len(r.Holds) > 0:
		return LockDecision{Granted: true, Write: LockStore, Value: r.AppendTo(nil), ExpireAt: r.expireAt()}
	case r.Claim != 0:
		return LockDecision{Granted: true, Write: LockStore, Value: r.AppendTo(nil), ExpireAt: r.expireAt(), Wake: WakeAll}
	}
	return LockDecision{Granted: true, Write: LockRemove, Wake: WakeOne}
}

// DecideRefresh decides lock_refresh of token with a new deadline (0:
// none): the exclusive entry equal to token, or token's read hold.
func DecideRefresh(old []byte, live bool, token []byte, deadline, now int64) LockDecision {
	if !live {
		return LockDecision{}
	}
	r, err := ParseReaderRecord(old)
	if err != nil {
		if bytes.Equal(old, token) {
			return LockDecision{Granted: true, Write: LockStore, Value: old, ExpireAt: deadline}
		}
		return LockDecision{}
	}
	r.prune(now)
	i := r.find(token)
	if i < 0 {
		return LockDecision{}
	}
	r.Holds[i].Deadline = deadline
	return LockDecision{Granted: true, Write: LockStore, Value: r.AppendTo(nil), ExpireAt: r.expireAt()}
}

// LockHolders says who holds a name with value old (live false: no live
// entry): holders 0 when it is free (no entry, or a reader record holding
// only a writer's claim); else LockExclusive with 1 (any live entry that is
// not a reader record), or LockShared with the number of live read holds.
func LockHolders(old []byte, live bool, now int64) (mode LockMode, holders int) {
	if !live {
		return LockExclusive, 0
	}
	r, err := ParseReaderRecord(old)
	if err != nil {
		return LockExclusive, 1
	}
	r.prune(now)
	if len(r.Holds) == 0 {
		return LockExclusive, 0
	}
	return LockShared, len(r.Holds)
}

// CheckLockAttempt is the limits on LockAttempt's arguments, for every
// backend: a key, a token a read hold can keep, a mode, and TTLs.
func CheckLockAttempt(key string, token []byte, mode LockMode, ttl, claim time.Duration) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := CheckLockToken(token); err != nil {
		return err
	}
	if mode != LockExclusive && mode != LockShared {
		return fmt.Errorf("%w: lock mode %d is neither exclusive (0) nor shared (1)", ErrInvalidArgument, int(mode))
	}
	if err := CheckTTL(ttl); err != nil {
		return err
	}
	return CheckTTL(claim)
}
