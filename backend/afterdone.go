package backend

import (
	"errors"
	"strings"

	"github.com/ephpm/ephpm/memstore"
)

// A call made of several steps (a Flush over shards, one at a time)
// refused at a step after one that removed or wrote did something: its
// error must not say memstore.ErrNothingDone ("nothing was written or
// granted"), which the extension reports as a known outcome. Each step's
// error passes through AfterDone once a step before it succeeded.

// AfterDone is err as the error of a call that changed something before
// it failed (a composed call's later step, a Flush's later shard): nil for
// nil; err itself unless it is memstore.ErrNothingDone; else an error that is
// everything err is (errors.Is) but memstore.ErrNothingDone, and whose message
// is err's without that error's text before it: the outcome is unknown.
func AfterDone(err error) error {
	if err == nil || !errors.Is(err, memstore.ErrNothingDone) {
		return err
	}
	return afterDone{err}
}

// afterDone is AfterDone's error.
type afterDone struct{ err error }

func (e afterDone) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), memstore.ErrNothingDone.Error()+": ")
	return strings.ReplaceAll(msg, memstore.ErrNothingDone.Error(), "refused") + " (after an earlier step of the call was done)"
}

// Is reports what err is, but for memstore.ErrNothingDone. (No Unwrap: it
// would lead errors.Is to err's memstore.ErrNothingDone.)
func (e afterDone) Is(target error) bool {
	return target != memstore.ErrNothingDone && errors.Is(e.err, target)
}

// As is errors.As of err, for a caller that looks for its cause's type.
func (e afterDone) As(target any) bool { return errors.As(e.err, target) }
