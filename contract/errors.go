package contract

import "errors"

// The errors every backend returns for the same causes. A backend wraps
// one of them (fmt.Errorf with %w) to say more, so callers test with
// errors.Is. The texts are what users read (include/ephpm_kv.h's
// EPHPM_KV_NOTHING_DONE is ErrNothingDone's), so they keep the store's old
// "kv:" prefix.
var (
	// ErrInvalidArgument is wrapped by every error that rejects an argument
	// (key length, value length, TTL range). Such a call changes nothing.
	ErrInvalidArgument = errors.New("kv: invalid argument")
	// ErrNoMemory: the write does not fit under the memory limit and the
	// eviction policy could not make room. Nothing changed.
	ErrNoMemory = errors.New("kv: out of memory")
	// ErrNotInteger: IncrBy met a value that is not a decimal int64.
	ErrNotInteger = errors.New("kv: value is not an integer")
	// ErrOverflow: IncrBy would leave the int64 range.
	ErrOverflow = errors.New("kv: increment would overflow")
	// ErrNothingDone is wrapped by an error that refused a call before it
	// wrote, granted or sent anything, for a cause outside its arguments:
	// a Redis server that may evict keys, a fence file that cannot be
	// made. Any other failure without one of the errors above (a lost
	// reply, a timeout) leaves the outcome unknown; this one does not.
	// The bridge still reports it as E_UNAVAILABLE, and its text, first
	// in the message, is include/ephpm_kv.h's EPHPM_KV_NOTHING_DONE, from
	// which the extension tells the two apart.
	ErrNothingDone = errors.New("nothing was written or granted")
)
