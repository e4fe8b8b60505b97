package contract

import "fmt"

// AddToCounter returns the stored counter v plus delta: the one rule for
// IncrBy in every backend that computes it itself. It fails with
// ErrNotInteger (quoting the start of v) if v is not an integer as
// parseInteger reads it, and with ErrOverflow if the sum leaves the int64
// range.
func AddToCounter(v []byte, delta int64) (int64, error) {
	n, ok := parseInteger(v)
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrNotInteger, truncate(v))
	}
	if (delta > 0 && n > maxInt64-delta) || (delta < 0 && n < minInt64-delta) {
		return 0, ErrOverflow
	}
	return n + delta, nil
}

// parseInteger reads v as Redis reads a counter (string2ll), so that both
// backends take and refuse the same values: an optional '-' and decimal
// digits, without a leading zero ("0" itself excepted), so no "-0", "007",
// '+', spaces or other characters, and within the int64 range. These are
// exactly the strings strconv.FormatInt writes.
func parseInteger(v []byte) (int64, bool) {
	if len(v) == 1 && v[0] == '0' {
		return 0, true
	}
	digits := v
	neg := len(v) > 0 && v[0] == '-'
	if neg {
		digits = v[1:]
	}
	// 19 digits hold every int64 and cannot overflow a uint64.
	if len(digits) == 0 || len(digits) > 19 || digits[0] < '1' || digits[0] > '9' {
		return 0, false
	}
	var u uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return int64(-u), true
	case !neg && u <= maxInt64:
		return int64(u), true
	}
	return 0, false
}

const (
	maxInt64 = 1<<63 - 1
	minInt64 = -1 << 63
)

func truncate(v []byte) []byte {
	if len(v) > 32 {
		return v[:32]
	}
	return v
}
