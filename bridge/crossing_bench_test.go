//go:build ephpmtest

package bridge

import "testing"

// One crossing from C per call (two for the lock pair), on the in-process
// store: what a PHP call of the member pays, less PHP's own work.
func BenchmarkCrossing(b *testing.B) {
	for _, c := range []struct {
		name string
		op   int
	}{
		{"get", benchGet}, {"set", benchSet}, {"exists", benchExists},
		{"set_nx+del_if_eq", benchLockPair}, {"incr_by", benchIncrBy}, {"pttl", benchPTTL},
	} {
		b.Run(c.name, func(b *testing.B) {
			key := "bench:" + c.name
			if c.op != benchLockPair && c.op != benchIncrBy {
				benchMember(benchSet, key, "sixteen byte val", 1)
			}
			b.ResetTimer()
			rc := benchMember(c.op, key, "sixteen byte val", b.N)
			if rc != 0 {
				b.Fatalf("%s answered %d", c.name, rc)
			}
		})
	}
}
