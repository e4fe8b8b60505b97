package shm

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/contract"
)

func TestTwoStoresOnOneSegmentShareEverything(t *testing.T) {
	a := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	b, err := Open(testName(t), Options{})
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, a.Set("k", []byte("from a"), 0))
	dst := make([]byte, 16)
	n, found, err := b.GetInto("k", dst)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "from a", string(dst[:n]))
	out, _ := b.SetNX("lock", []byte("b"), time.Minute)
	assert.Equal(t, contract.Inserted, out)
	out, _ = a.SetNX("lock", []byte("a"), time.Minute)
	assert.Equal(t, contract.Exists, out, "b's lock holds for a")
	st, err := a.Stats()
	require.NoError(t, err)
	assert.Equal(t, "shm", a.Name())
	assert.Equal(t, int64(2), st.Keys)
	assert.Equal(t, 2, a.Attached(), "two attachments of this process")
	sa, _ := a.Stats()
	sb, _ := b.Stats()
	assert.Equal(t, sa.InstanceID, sb.InstanceID, "one segment, one instance id")
}

func TestASecondProcessSeesWrites(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	require.NoError(t, s.Set("parent", []byte("p"), 0))
	w := startWorker(t, "echo", []string{"SHM_NAME=" + testName(t)})
	w.expect(t, "got p")
	require.NoError(t, w.cmd.Wait())
	dst := make([]byte, 8)
	n, found, _ := s.GetInto("child", dst)
	require.True(t, found)
	assert.Equal(t, "c", string(dst[:n]))
}

func init() {
	workers["echo"] = func() {
		s := workerStore()
		if s == nil {
			return
		}
		defer s.Close()
		dst := make([]byte, 8)
		n, _, _ := s.GetInto("parent", dst)
		fmt.Println("got", string(dst[:n]))
		s.Set("child", []byte("c"), 0)
	}
	workers["setnx"] = setNXWorker
}

// setNXWorker races SetNX on the key of each round r once released by the
// end of the pipe on fd 3+r (closing it wakes every reader at once), and
// reports win or lose.
func setNXWorker() {
	s := workerStore()
	if s == nil {
		return
	}
	defer s.Close()
	rounds, _ := strconv.Atoi(os.Getenv("SHM_ROUNDS"))
	for r := 0; r < rounds; r++ {
		release := os.NewFile(uintptr(3+r), "release")
		fmt.Println("ready")
		var b [1]byte
		if n, _ := release.Read(b[:]); n != 0 {
			return
		}
		out, err := s.SetNX(fmt.Sprintf("race:%d", r), []byte(os.Getenv("SHM_ID")), time.Minute)
		switch {
		case err != nil:
			fmt.Println("error", err)
		case out == contract.Inserted:
			fmt.Println("win")
		default:
			fmt.Println("lose")
		}
	}
}

func TestSetNXAcrossProcessesHasExactlyOneWinner(t *testing.T) {
	const procs, rounds = 20, 50
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	// A pipe per round: closing its write end is the barrier's release.
	reads, writes := make([]*os.File, rounds), make([]*os.File, rounds)
	for i := range reads {
		var err error
		reads[i], writes[i], err = os.Pipe()
		require.NoError(t, err)
	}
	ws := make([]*worker, procs)
	for i := range ws {
		ws[i] = startWorker(t, "setnx", []string{"SHM_NAME=" + testName(t), fmt.Sprintf("SHM_ID=%d", i),
			fmt.Sprintf("SHM_ROUNDS=%d", rounds)}, reads...)
	}
	for _, r := range reads {
		r.Close()
	}
	for round := 0; round < rounds; round++ {
		for _, w := range ws {
			w.expect(t, "ready")
		}
		writes[round].Close()
		wins := 0
		for _, w := range ws {
			switch l := <-w.lines; l {
			case "win":
				wins++
			case "lose":
			default:
				t.Fatalf("round %d: %q", round, l)
			}
		}
		require.Equal(t, 1, wins, "round %d", round)
	}
	for _, w := range ws {
		require.NoError(t, w.cmd.Wait())
	}
	st, _ := s.Stats()
	assert.Equal(t, uint64(rounds), st.SetNXWins)
	assert.Equal(t, uint64(rounds*(procs-1)), st.SetNXLosses)
}

func init() {
	workers["wait"] = func() {
		s := workerStore()
		if s == nil {
			return
		}
		defer s.Close()
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			free, err := s.Wait("lock", 5*hangLimit)
			fmt.Println("free", free, err)
		}
	}
}

// TestAReleaseWakesAWaiterInAnotherProcess releases a lock a process
// waits for, three times: each time the release itself must wake it, by
// marking its wait slot woken and bumping the slot's futex word (the word
// FUTEX_WAKE is made on) in its own step, before it returns; only a wake
// changes that word, so a waiter that found the key free at its re-check
// every maxWaitSleep leaves it as it was. How soon the woken process runs
// is the host's scheduler's (bench/shmhandoff measures the hand-off).
func TestAReleaseWakesAWaiterInAnotherProcess(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 1 << 20})
	w := startWorkerIn(t, "wait", []string{"SHM_NAME=" + testName(t)})
	sh, _, _ := s.locate("lock")
	for round := 0; round < 3; round++ {
		_, err := s.SetNX("lock", []byte("tok"), time.Minute)
		require.NoError(t, err)
		fmt.Fprintln(w.stdin, "wait")
		require.Eventually(t, func() bool { return s.waitingOn(sh) == 1 }, hangLimit, time.Millisecond)
		slot := waitSlotOf(t, s, "lock")
		seq := atomic.LoadUint32(s.g.waitSeq(slot))
		ok, err := s.DelIfEq("lock", []byte("tok"))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, seq+1, atomic.LoadUint32(s.g.waitSeq(slot)), "round %d: the release woke the waiter", round)
		w.expect(t, "free true <nil>")
		assert.Zero(t, s.waitingOn(sh))
	}
	w.stdin.Close()
	require.NoError(t, w.cmd.Wait())
}
