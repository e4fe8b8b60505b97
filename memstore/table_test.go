package memstore

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The table against a map, through inserts and deletes that exercise probe
// runs wrapping around the end, backward shifts, growth and shrinking. The
// hash is taken small on purpose so that many keys collide.
func TestTableMatchesAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var tb table
	model := map[string]block{}
	hash := func(k string) uint32 { return uint32(len(k)%7) + 1 + uint32(k[len(k)-1])%5*8 }
	for step := 0; step < 50000; step++ {
		k := fmt.Sprintf("k%d", r.IntN(300))
		h := hash(k)
		if r.IntN(3) > 0 {
			if i := tb.find(h, k); i >= 0 {
				tb.removeAt(i)
				delete(model, k)
			} else {
				b, _ := newBlock(k, 0, 0, 0, 0)
				tb.add(h, b)
				model[k] = b
			}
		}
		if step%97 == 0 {
			require.Equal(t, len(model), tb.n)
			for mk, mb := range model {
				require.Equal(t, mb, tb.get(hash(mk), mk), "step %d key %s", step, mk)
			}
			for i := 0; i < 300; i++ {
				k := fmt.Sprintf("k%d", i)
				if _, ok := model[k]; !ok {
					require.Nil(t, tb.get(hash(k), k))
				}
			}
		}
	}
}
