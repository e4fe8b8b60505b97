package backend

import (
	"errors"
	"strings"

	"github.com/ephpm/ephpm/contract"
)

// A call made of several steps (a Flush over shards, one at a time)
// refused at a step after one that removed or wrote did something: its
// error must not say contract.ErrNothingDone ("nothing was written or
// granted"), which the extension reports as a known outcome. Each step's
// error passes through AfterDone once a step before it succeeded.

// AfterDone is err as the error of a call that changed something before
// it failed (a composed call's later step, a Flush's later shard): nil for
// nil; err itself unless it is contract.ErrNothingDone; else an error that is
// everything err is (errors.Is) but contract.ErrNothingDone, and whose message
// is err's without that error's text before it: the outcome is unknown.
func AfterDone(err error) error {
	if err == nil || !errors.Is(err, contract.ErrNothingDone) {
		return err
	}
	return afterDone{err}
}

// afterDone is AfterDone's error.
type afterDone struct{ err error }

func (e afterDone) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), contract.ErrNothingDone.Error()+": ")
	return strings.ReplaceAll(msg, contract.ErrNothingDone.Error(), "refused") + " (after an earlier step of the call was done)"
}

// Is reports what err is, but for contract.ErrNothingDone. (No Unwrap: it
// would lead errors.Is to err's contract.ErrNothingDone.)
func (e afterDone) Is(target error) bool {
	return target != contract.ErrNothingDone && errors.Is(e.err, target)
}

// As is errors.As of err, for a caller that looks for its cause's type.
func (e afterDone) As(target any) bool { return errors.As(e.err, target) }
