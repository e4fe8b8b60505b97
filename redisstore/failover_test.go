package redisstore_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/internal/lockfailover"
	"github.com/ephpm/ephpm/internal/redistest"
)

// waitParams make the holder's Store wait for a replica's acknowledgement
// of each write, for up to a second.
const waitParams = "&wait_replicas=1&wait_timeout=1s"

// Locks across a Sentinel failover (issue 29, item 2), in a master, a
// replica and three Sentinels on 127.0.0.1: in each round a holder takes a
// lock and a fenced lock, the master is SIGKILLed as soon as the grants are
// acknowledged, and once the Sentinels have promoted the replica a second
// client asks for both (see lockfailover.Round). A holder that waits for
// the replica is never a double holder: either its grant failed (it was
// told the grant may be lost) or the promoted replica has it. Cut off:
// rounds where the replica misses the grants for certain (its link is
// cut before them), which without waiting make double holders, and with
// waiting make the grants fail.
func TestSentinelFailoverLosesNoGrantWithWaitReplicas(t *testing.T) {
	began := time.Now()
	d := redistest.StartDeployment(t, 500*time.Millisecond, time.Second)
	rounds, cutRounds := 50, 3
	if testing.Short() {
		rounds = 5
	}
	// Every round's outcome is logged at the end, after any failure's
	// message (which names its round), so that a failure leads the output.
	var log []string
	defer func() {
		for _, l := range log {
			t.Log(l)
		}
	}()
	run := func(phase string, n int, m lockfailover.Mode, check func(r string, o lockfailover.Outcome)) tally {
		var tl tally
		for i := 0; i < n; i++ {
			r := fmt.Sprintf("%s round %d", phase, i)
			o, err := lockfailover.Round(d, fmt.Sprintf("failover:%s:%d", phase, i), m)
			require.NoError(t, err, "%s: the harness", r)
			r += ": " + o.String()
			log = append(log, r)
			tl.add(o)
			check(r, o)
			if o.Fence1 != 0 && o.Fence2 != 0 {
				assert.Greater(t, o.Fence2, o.Fence1, "a fence minted after the failover is above the holder's; %s", r)
			}
		}
		return tl
	}

	cutNoWait := run("cut-nowait", cutRounds, lockfailover.Mode{Cut: true}, func(r string, o lockfailover.Outcome) {
		require.NoError(t, o.LockErr, "without waiting the master grants; %s", r)
		require.NoError(t, o.FencedErr, "without waiting the master grants; %s", r)
	})
	assert.Positive(t, cutNoWait.double, "without waiting, a grant the replica missed makes a double holder")

	cutWait := run("cut-wait", cutRounds, lockfailover.Mode{Cut: true, HolderParams: waitParams}, func(r string, o lockfailover.Outcome) {
		assert.Error(t, o.LockErr, "the replica cannot acknowledge the grant: it must fail; %s", r)
		assert.Error(t, o.FencedErr, "the replica cannot acknowledge the fenced grant: it must fail; %s", r)
		assert.False(t, o.Double(), "double holder; %s", r)
		assert.False(t, o.FencedDouble(), "double holder of the fenced lock; %s", r)
	})

	wait := run("wait", rounds, lockfailover.Mode{HolderParams: waitParams}, func(r string, o lockfailover.Outcome) {
		if o.LockErr == nil {
			assert.False(t, o.LockLost, "an acknowledged grant is on the promoted replica; %s", r)
			assert.False(t, o.Double(), "double holder; %s", r)
		}
		if o.FencedErr == nil {
			assert.False(t, o.FencedLost, "an acknowledged fenced grant is on the promoted replica; %s", r)
			assert.False(t, o.FencedDouble(), "double holder of the fenced lock; %s", r)
			assert.GreaterOrEqual(t, o.FenceAfter, o.Fence1, "the new master has the holder's fence; %s", r)
		}
	})
	// Grants refused in most rounds would show nothing: a replica in sync
	// acknowledges within milliseconds.
	assert.Greater(t, wait.rounds-wait.refused, rounds/2, "grants granted; waiting: %s", wait)

	t.Logf("cut off, no wait: %s", cutNoWait)
	t.Logf("cut off, waiting: %s", cutWait)
	t.Logf("waiting: %s; whole test %v", wait, time.Since(began).Round(time.Second))
}

// tally sums a phase's rounds.
type tally struct {
	rounds, refused, double int
	failover                []time.Duration
}

func (tl *tally) add(o lockfailover.Outcome) {
	tl.rounds++
	if o.LockErr != nil || o.FencedErr != nil {
		tl.refused++
	}
	if o.Double() || o.FencedDouble() {
		tl.double++
	}
	tl.failover = append(tl.failover, o.Failover)
}

func (tl tally) String() string {
	s := slices.Clone(tl.failover)
	slices.Sort(s)
	var med, top time.Duration
	if len(s) > 0 {
		med, top = s[len(s)/2], s[len(s)-1]
	}
	return fmt.Sprintf("%d rounds, grants refused in %d, double holders in %d, failover median %v, max %v",
		tl.rounds, tl.refused, tl.double, med.Round(time.Millisecond), top.Round(time.Millisecond))
}
