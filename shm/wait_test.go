package shm

import (
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitingOnKey starts s.Wait(key) in a goroutine and returns the wait
// slot it registered and the channel its error arrives on. The deadline
// only catches a hang.
func waitingOnKey(t *testing.T, s *Store, key string) (int, chan error) {
	t.Helper()
	res := make(chan error, 1)
	go func() { _, err := s.Wait(key, 5*hangLimit); res <- err }()
	for deadline := time.Now().Add(hangLimit); ; runtime.Gosched() {
		for i := 0; i < waitSlots; i++ {
			if c := atomic.LoadUint64(s.g.waitCtl(i)); ctlState(c) == wWaiting && ctlOwner(c) == s.tag {
				return i, res
			}
		}
		require.True(t, time.Now().Before(deadline), "Wait never registered")
	}
}

// rouse makes the waiter on slot i look at its key again now, as a
// spurious wake-up does: its sequence moves, its state does not.
func rouse(s *Store, i int) {
	atomic.AddUint32(s.g.waitSeq(i), 1)
	futexWakeOne(s.g.waitSeq(i))
}

// refusedWait waits (bounded: a hang catch) for the Wait's error, and
// checks that its slot was freed and is no longer counted: a slot left waiting, owned by this live
// process, would soak up the key's wake-ups (oldest ticket first) until
// the process exits.
func refusedWait(t *testing.T, s *Store, slot int, res chan error) error {
	t.Helper()
	var err error
	select {
	case err = <-res:
	case <-time.After(hangLimit):
		t.Fatal("Wait did not return")
	}
	require.Error(t, err)
	c := atomic.LoadUint64(s.g.waitCtl(slot))
	require.Equal(t, uint64(0), c, "slot %d left as state %d, owner %#x (this store's tag %#x)",
		slot, ctlState(c), ctlOwner(c), s.tag)
	sh := &s.shards[atomic.LoadUint32(s.g.waitShard(slot))]
	require.Zero(t, atomic.LoadUint32(sh.u32(sWaiters)), "the shard still counts the waiter")
	return err
}

// TestAWaitRefusedForARemovedFileFreesItsSlot: the file is found removed
// while a Wait sleeps; its next look is refused, and it frees its slot.
func TestAWaitRefusedForARemovedFileFreesItsSlot(t *testing.T) {
	name := testName(t)
	s := openRemovable(t, name)
	require.NoError(t, s.Set("k", []byte("v"), 0))
	slot, res := waitingOnKey(t, s, "k")
	require.NoError(t, os.Remove(Path("", name)))
	require.Error(t, s.Revalidate())
	rouse(s, slot)
	require.ErrorIs(t, refusedWait(t, s, slot, res), ErrSegmentRemoved)
}

// TestAWaitRefusedForABrokenShardFreesItsSlot: the shard is marked broken
// (by another call's check) while a Wait sleeps; its next lock is refused,
// and it frees its slot.
func TestAWaitRefusedForABrokenShardFreesItsSlot(t *testing.T) {
	s := openRemovable(t, testName(t))
	require.NoError(t, s.Set("k", []byte("v"), 0))
	slot, res := waitingOnKey(t, s, "k")
	sh, _, _ := s.locate("k")
	atomic.StoreUint32(sh.u32(sBroken), 1)
	rouse(s, slot)
	require.ErrorIs(t, refusedWait(t, s, slot, res), ErrCorrupt)
}

// TestAWaitThatFindsCorruptionFreesItsSlot: a Wait's look at its key,
// under the lock, meets a damaged index slot (a corruption caught by
// catchHeld); it frees its wait slot.
func TestAWaitThatFindsCorruptionFreesItsSlot(t *testing.T) {
	s := openRemovable(t, testName(t))
	require.NoError(t, s.Set("k", []byte("v"), 0))
	slot, res := waitingOnKey(t, s, "k")
	sh, _, tag := s.locate("k")
	require.NoError(t, s.lock(sh))
	pos, _, _ := sh.lookup(tag, "k")
	require.GreaterOrEqual(t, pos, 0)
	atomic.StoreUint64(sh.slot(pos), makeSlot(tag, sh.g.heapSize-8))
	s.unlock(sh)
	rouse(s, slot)
	require.ErrorIs(t, refusedWait(t, s, slot, res), ErrCorrupt)
}
