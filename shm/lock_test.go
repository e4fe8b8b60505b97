package shm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

func TestALockHeldByALiveProcessIsNotTakenOver(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	other, err := Open(testName(t), Options{})
	require.NoError(t, err)
	defer other.Close()
	sh, _, _ := s.locate("key")
	tookOver, _ := other.g.lockWord(sh.u32(sLock), other.tag)
	require.False(t, tookOver)
	done := make(chan struct{})
	go func() {
		defer close(done)
		get(t, s, "key")
	}()
	select {
	case <-done:
		t.Fatal("took a live owner's lock")
	case <-time.After(3 * lockPoll):
	}
	unlockWord(sh.u32(sLock))
	<-done
	assert.Zero(t, s.Recoveries())
}
