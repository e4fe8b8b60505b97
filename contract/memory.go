package contract

import "fmt"

// Policy says what a write does when it does not fit under the limit.
type Policy int32

const (
	// NoEviction: the write fails with ErrNoMemory.
	NoEviction Policy = iota
	// VolatileLRU: evict the least recently used entries that have a TTL.
	VolatileLRU
	// AllKeysLRU: evict the least recently used entries, TTL or not.
	AllKeysLRU
)

var policyNames = [...]string{NoEviction: "noeviction", VolatileLRU: "volatile-lru", AllKeysLRU: "allkeys-lru"}

func (p Policy) String() string {
	if p >= 0 && int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", int32(p))
}

// ParsePolicy reads noeviction, volatile-lru or allkeys-lru.
func ParsePolicy(name string) (Policy, error) {
	for p, n := range policyNames {
		if n == name {
			return Policy(p), nil
		}
	}
	return 0, fmt.Errorf("%w: eviction policy %q is not noeviction, volatile-lru or allkeys-lru", ErrInvalidArgument, name)
}

// CompressionNames are the words for compression off and on (lz4), in
// that order: the compression setting takes one, stats report one.
var CompressionNames = [2]string{"none", "lz4"}

// CompressionName is the word for compression on or off.
func CompressionName(on bool) string {
	if on {
		return CompressionNames[1]
	}
	return CompressionNames[0]
}

// ParseCompression reads none or lz4.
func ParseCompression(name string) (bool, error) {
	for i, n := range CompressionNames {
		if n == name {
			return i == 1, nil
		}
	}
	return false, fmt.Errorf("%w: compression %q is not none or lz4", ErrInvalidArgument, name)
}

// CheckMemoryConfig refuses, with ErrInvalidArgument, a memory setting no
// store can apply: a negative limit or compression minimum, an unknown
// policy. The session budget is checked against the limit by
// SessionRule.Budget.
func CheckMemoryConfig(cfg MemoryConfig) error {
	switch {
	case cfg.Limit < 0:
		return fmt.Errorf("%w: memory limit %d is negative", ErrInvalidArgument, cfg.Limit)
	case cfg.Policy < NoEviction || cfg.Policy > AllKeysLRU:
		return fmt.Errorf("%w: unknown eviction policy %d", ErrInvalidArgument, cfg.Policy)
	case cfg.CompressionMinSize < 0:
		return fmt.Errorf("%w: compression minimum size %d is negative", ErrInvalidArgument, cfg.CompressionMinSize)
	}
	return nil
}

// MemoryConfig is the store's memory setting. Locks and pinned prefixes
// are never evicted whatever the policy.
type MemoryConfig struct {
	Limit int64 // bytes; 0 means no limit
	// SessionLimit is the budget of session data (SessionRule) within
	// Limit, in bytes: session data never takes more, so a flood of
	// sessions cannot crowd out other keys and locks. It must be below a
	// Limit that is set. 0 means half of Limit (no budget when Limit is 0).
	SessionLimit       int64
	Policy             Policy
	Compression        bool // lz4 for values of at least CompressionMinSize bytes
	CompressionMinSize int
}
