package shm

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

// TestRecoveryReadsEachStepOfAWrite stops a dead owner's replacement of
// key's value after each step of the write protocol, with the shard still
// locked by it, and checks what the next caller reads once it has taken the
// lock over: the old value before the commit (the index store), the new
// one from it on, and a consistent shard either way.
func TestRecoveryReadsEachStepOfAWrite(t *testing.T) {
	steps := []string{"allocated", "written", "old in flight", "published", "new live", "old freed"}
	for stop := range steps {
		t.Run(steps[stop], func(t *testing.T) {
			s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
			require.NoError(t, s.Set("key", []byte("old value"), 0))
			sh, h, tag := s.locate("key")
			dead := deadTag(t, s)
			atomic.StoreUint32(sh.u32(sLock), dead) // it died holding the lock
			pos, old, _ := sh.lookup(tag, "key")
			stored := []byte("new value, longer")
			b := sh.alloc(entrySize(3, len(stored)))
			do := []func(){
				func() {},
				func() { sh.writeEntry(b, "key", stored, 0, 0, 0, 0) },
				func() { sh.setState(old, stateInFlight) },
				func() { atomic.StoreUint64(sh.slot(pos), makeSlot(tag, b)) },
				func() { sh.setState(b, stateLive) },
				func() { sh.release(old) },
			}
			for _, f := range do[:stop+1] {
				f()
			}
			_ = h
			v, found := get(t, s, "key")
			require.True(t, found)
			if stop < 3 {
				assert.Equal(t, "old value", v)
			} else {
				assert.Equal(t, string(stored), v)
			}
			assert.Equal(t, uint64(1), s.Recoveries(), "taken over from the dead owner and recovered")
			require.NoError(t, s.Check())
			st, _ := s.Stats()
			assert.Equal(t, int64(1), st.Keys)
		})
	}
}

func TestRecoveryReadsAnInterruptedRemoval(t *testing.T) {
	for stop, step := range []string{"in flight", "tombstone"} {
		t.Run(step, func(t *testing.T) {
			s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
			require.NoError(t, s.Set("key", []byte("v"), 0))
			sh, _, tag := s.locate("key")
			atomic.StoreUint32(sh.u32(sLock), deadTag(t, s))
			pos, b, _ := sh.lookup(tag, "key")
			sh.setState(b, stateInFlight)
			if stop == 1 {
				sh.removeAt(pos)
			}
			_, found := get(t, s, "key")
			assert.Equal(t, stop == 0, found, "before the tombstone the entry stays")
			require.NoError(t, s.Check())
		})
	}
}
