//go:build ephpmtest

package bridge

import (
	"math"
	"testing"
)

// A TTL in ms that no time.Duration holds is refused, whichever its sign:
// the product of a very negative one would wrap into a valid TTL.
func TestAnUnholdableTTLIsRefused(t *testing.T) {
	for _, ms := range []int64{-18446744073709, math.MinInt64, math.MaxInt64, -1} {
		if rc, _ := invokeMember(memberSet, []byte("ttl-wrap"), []byte("v"), false, false, ms, 0); rc != -3 {
			t.Errorf("set with a TTL of %d ms answered %d, not E_INVALID (-3)", ms, rc)
		}
	}
	if rc, _ := invokeMember(memberGet, []byte("ttl-wrap"), nil, false, false, 0, 16); rc != 1 {
		t.Errorf("get after the refused sets answered %d, not MISS (1): a refused call changes nothing", rc)
	}
}
