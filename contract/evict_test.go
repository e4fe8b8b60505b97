package contract

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClassOfKeepsPinnedAndHeldAndOrdersSessionsByReturn(t *testing.T) {
	never := func() bool { t.Fatal("held asked of an entry whose class it cannot change"); return false }
	yes := func() bool { return true }
	no := func() bool { return false }
	assert.Equal(t, EvictKept, ClassOf(KindPlain, true, false, never), "a pinned entry")
	assert.Equal(t, EvictKept, ClassOf(KindSessionLock, true, false, never), "a lock")
	assert.Equal(t, EvictKept, ClassOf(KindSession, true, true, never), "pinned session data")
	assert.Equal(t, EvictPlain, ClassOf(KindPlain, false, true, never))
	assert.Equal(t, EvictPlain, ClassOf(KindPlain, false, false, nil), "held may be nil for another kind")
	assert.Equal(t, EvictKept, ClassOf(KindSession, false, true, yes), "held session data: a request is using it")
	assert.Equal(t, EvictNew, ClassOf(KindSession, false, false, no))
	assert.Equal(t, EvictReturned, ClassOf(KindSession, false, true, no))
}

func TestOnlySessionDataMakesSessionDataGo(t *testing.T) {
	assert.Equal(t, []EvictClass{EvictPlain}, EvictOrder(KindPlain))
	assert.Equal(t, []EvictClass{EvictPlain}, EvictOrder(KindSessionLock))
	assert.Equal(t, []EvictClass{EvictPlain, EvictNew, EvictReturned}, EvictOrder(KindSession))
	assert.Equal(t, []EvictClass{EvictNew, EvictReturned}, BudgetEvictOrder())
}

func TestPolicyEvicts(t *testing.T) {
	for _, c := range []struct {
		p             Policy
		noTTL, hasTTL bool
	}{{NoEviction, false, false}, {VolatileLRU, false, true}, {AllKeysLRU, true, true}} {
		assert.Equal(t, c.noTTL, c.p.Evicts(false), "%v, an entry with no TTL", c.p)
		assert.Equal(t, c.hasTTL, c.p.Evicts(true), "%v, an entry with a TTL", c.p)
	}
	assert.Equal(t, "returned session", EvictReturned.String())
}
