// Package lockfailover is the round that bench/failover measures and
// redisstore's failover test asserts on (issue 29, item 2): in a
// redistest.Deployment a holder takes a lock and a fenced grant of a
// second name through Sentinel, the master is SIGKILLed as soon as both
// are acknowledged, and once every Sentinel names the promoted replica a
// second client, also through Sentinel, asks for the same lock and the
// same fenced grant. The killed master then comes back as a replica of the
// new one.
package lockfailover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/redisstore"
)

// Patience bounds each wait of a round: a hang catch, not a speed bound.
const Patience = 60 * time.Second

// lockTTL outlasts a round: a lock the second finds held is the holder's.
const lockTTL = 30 * time.Second

// Mode is what a round does besides the grants and the kill.
type Mode struct {
	// HolderParams are added to the holder's URL, such as
	// "&wait_replicas=1&wait_timeout=1s".
	HolderParams string
	// HarnessWait, if not 0, is the timeout of a WAIT 1 that the round
	// sends to the master itself after the grants and before the kill, on
	// a connection of its own and behind a write of its own (WAIT waits
	// for the calling connection's latest write, which then covers the
	// grants).
	HarnessWait time.Duration
	// Ballast, if not 0, is the size of a value written to the master
	// ahead of the grants while the replica is stopped (SIGSTOP, for less
	// than down-after; SIGCONT at the kill): the grants wait behind it in
	// the master's buffer, as behind the backlog of a replica that fell
	// behind.
	Ballast int
	// Cut: the replica's link is cut before the grants (see
	// redistest.Deployment.CutReplica), and the replica runs again at the
	// kill.
	Cut bool
}

// Outcome is what a round saw.
type Outcome struct {
	// LockErr and FencedErr are the errors of the holder's grants: the
	// holder was told that the grant may be lost.
	LockErr, FencedErr error
	// HarnessWaited: the round's own WAIT (Mode.HarnessWait) answered 1.
	HarnessWaited bool
	// LockLost and FencedLost: the promoted replica lacked the holder's
	// lock, its fenced lock (looked up before the second asked).
	LockLost, FencedLost bool
	// SecondLock and SecondFenced: the second was granted the lock, the
	// fenced lock.
	SecondLock, SecondFenced bool
	// Fence1 is the holder's fence (0 if its grant failed), Fence2 the
	// second's (0 if it was not granted), FenceAfter the latest fence of
	// the name on the new master once the second had asked.
	Fence1, Fence2, FenceAfter int64
	// Failover is from the kill to every Sentinel naming the replica;
	// Ready the round's wait for a whole deployment before it began.
	Failover, Ready time.Duration
}

// Double: both the holder and the second were granted the lock.
func (o Outcome) Double() bool { return o.LockErr == nil && o.SecondLock }

// FencedDouble: both were granted the fenced lock.
func (o Outcome) FencedDouble() bool { return o.FencedErr == nil && o.SecondFenced }

func (o Outcome) String() string {
	s := fmt.Sprintf("failover %v, ", o.Failover.Round(time.Millisecond))
	if o.LockErr != nil || o.FencedErr != nil {
		s += fmt.Sprintf("grants refused (%v; %v), ", o.LockErr, o.FencedErr)
	}
	s += fmt.Sprintf("lock lost %v, double holder %v, fenced lost %v, fenced double %v, fence %d -> %d (new master's %d)",
		o.LockLost, o.Double(), o.FencedLost, o.FencedDouble(), o.Fence1, o.Fence2, o.FenceAfter)
	return s + fmt.Sprintf(", WAIT answered 1: %v (ready after %v)", o.HarnessWaited, o.Ready.Round(time.Millisecond))
}

func token() []byte {
	b := make([]byte, 16)
	rand.Read(b)
	return []byte(hex.EncodeToString(b))
}

// Round runs one round in d with mode m, on the names name+":lock" and
// name+":fenced" (fresh in every round). An error is the harness's (a
// server that does not answer, a failover that does not come), not an
// outcome.
func Round(d *redistest.Deployment, name string, m Mode) (Outcome, error) {
	var o Outcome
	t0 := time.Now()
	mi, err := d.Ready(Patience)
	if err != nil {
		return o, err
	}
	o.Ready = time.Since(t0)
	master, replica := d.Data[mi], d.Data[1-mi]
	ctx := context.Background()
	lock, fenced := name+":lock", name+":fenced"

	holder, err := redisstore.Open(d.URL+m.HolderParams, redisstore.Options{})
	if err != nil {
		return o, err
	}
	defer holder.Close()
	// The first calls learn the eviction policy and load the script: the
	// grants below are one command each.
	if _, err := holder.SetNX(name+":warm", []byte("x"), time.Second); err != nil {
		return o, fmt.Errorf("warm-up: %v", err)
	}
	if _, _, err := backend.SetNXFenced(holder, name+":warm:fenced", []byte("x"), time.Second); err != nil {
		return o, fmt.Errorf("warm-up: %v", err)
	}
	plain := redis.NewClient(&redis.Options{Addr: master.Addr, MaxRetries: -1, ReadTimeout: m.HarnessWait + 2*time.Second})
	defer plain.Close()
	if err := plain.Ping(ctx).Err(); err != nil {
		return o, err
	}
	resume := func() error { return nil }
	if m.Ballast > 0 {
		if err := replica.Signal(syscall.SIGSTOP); err != nil {
			return o, err
		}
		resume = func() error { return replica.Signal(syscall.SIGCONT) }
		defer resume()
		if err := plain.Set(ctx, name+":ballast", strings.Repeat("b", m.Ballast), 10*time.Second).Err(); err != nil {
			return o, err
		}
	}
	if m.Cut {
		if resume, err = d.CutReplica(mi); err != nil {
			return o, err
		}
		defer resume()
	}

	t1, t2 := token(), token()
	var wg sync.WaitGroup
	var out1, outF contract.SetNXOutcome
	wg.Add(2)
	go func() { defer wg.Done(); out1, o.LockErr = holder.SetNX(lock, t1, lockTTL) }()
	go func() {
		defer wg.Done()
		outF, o.Fence1, o.FencedErr = backend.SetNXFenced(holder, fenced, t1, lockTTL)
	}()
	wg.Wait()
	if (o.LockErr == nil && out1 != contract.Inserted) || (o.FencedErr == nil && outF != contract.Inserted) {
		return o, fmt.Errorf("the holder's grants of fresh names found them held: %v %v", out1, outF)
	}
	if o.FencedErr != nil {
		o.Fence1 = 0
	}
	if m.HarnessWait > 0 {
		cmds, err := plain.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, name+":marker", 1, lockTTL)
			p.Do(ctx, "wait", 1, m.HarnessWait.Milliseconds())
			return nil
		})
		if err != nil {
			return o, fmt.Errorf("WAIT: %v", err)
		}
		n, _ := cmds[1].(*redis.Cmd).Int64()
		o.HarnessWaited = n >= 1
	}
	start := time.Now()
	master.Stop() // SIGKILL
	if err := resume(); err != nil {
		return o, err
	}
	holder.Close()

	if err := d.AwaitFailover(mi, Patience); err != nil {
		return o, err
	}
	o.Failover = time.Since(start)

	// What the promoted replica had of the holder's grants.
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr, MaxRetries: -1})
	defer rc.Close()
	n, err := rc.Exists(ctx, lock, fenced).Result()
	if err != nil {
		return o, err
	}
	if n < 2 {
		if o.LockLost, err = absent(ctx, rc, lock); err != nil {
			return o, err
		}
		if o.FencedLost, err = absent(ctx, rc, fenced); err != nil {
			return o, err
		}
	}

	second, err := redisstore.Open(d.URL, redisstore.Options{})
	if err != nil {
		return o, err
	}
	defer second.Close()
	// The new master may not take writes at once: the second tries again
	// until it does.
	out2, err := retry(start, func() (contract.SetNXOutcome, error) { return second.SetNX(lock, t2, lockTTL) })
	if err != nil {
		return o, fmt.Errorf("the second's grant: %v", err)
	}
	var f2 int64
	outF2, err := retry(start, func() (out contract.SetNXOutcome, err error) {
		out, f2, err = backend.SetNXFenced(second, fenced, t2, lockTTL)
		return out, err
	})
	if err != nil {
		return o, fmt.Errorf("the second's fenced grant: %v", err)
	}
	// A try whose reply was lost, tried again, reads Exists: the value
	// says who holds the lock.
	if o.SecondLock, err = holds(ctx, rc, lock, out2, t2); err != nil {
		return o, err
	}
	if o.SecondFenced, err = holds(ctx, rc, fenced, outF2, t2); err != nil {
		return o, err
	}
	if outF2 == contract.Inserted {
		o.Fence2 = f2
	}
	if o.FenceAfter, err = second.Fence(fenced); err != nil {
		return o, err
	}

	// The killed master comes back as a replica of the new one.
	return o, d.Rejoin(mi)
}

// retry calls grant until it answers, or Patience after start.
func retry(start time.Time, grant func() (contract.SetNXOutcome, error)) (contract.SetNXOutcome, error) {
	for {
		out, err := grant()
		if err == nil || time.Since(start) > Patience {
			return out, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func absent(ctx context.Context, c *redis.Client, key string) (bool, error) {
	n, err := c.Exists(ctx, key).Result()
	return n == 0, err
}

// holds says whether the holder of token t holds the lock at key, which
// a grant answered out.
func holds(ctx context.Context, c *redis.Client, key string, out contract.SetNXOutcome, t []byte) (bool, error) {
	if out == contract.Inserted {
		return true, nil
	}
	v, err := c.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return v == string(t), err
}
