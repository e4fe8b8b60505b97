package redisstore

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/sessionkeys"
)

func TestLockLeaseParameter(t *testing.T) {
	c, err := parse("redis://127.0.0.1:7000")
	require.NoError(t, err)
	assert.Equal(t, DefaultLease, c.lease)
	c, err = parse("redis://127.0.0.1:7000?lock_lease=500ms")
	require.NoError(t, err)
	assert.Equal(t, 500*time.Millisecond, c.lease)
	c, err = parse("redis://127.0.0.1:7000?lock_lease=0")
	require.NoError(t, err)
	assert.Zero(t, c.lease, "0: no lease")
	for _, bad := range []string{"50ms", "-1s", "2", "x", ""} {
		_, err := parse("redis://127.0.0.1:7000?lock_lease=" + bad)
		assert.ErrorIs(t, err, ErrConfig, bad)
	}
}

// boundStep is the session handler's grant: the lock bound to this
// process, its fence minted.
func boundStep(lock string, token []byte, ttl time.Duration) backend.Step {
	return backend.Step{Lock: lock, Token: token, LockTTL: ttl, Acquire: true, Fenced: true, Bound: true}
}

// leftOf is the PTTL of store key key (-2: none).
func leftOf(t *testing.T, s *Store, key string) time.Duration {
	t.Helper()
	r, err := s.do(nil, "pttl", testKey(key))
	require.NoError(t, err)
	if r.n < 0 {
		return time.Duration(r.n)
	}
	return time.Duration(r.n) * time.Millisecond
}

// Only a Bound grant gets the lease: a lock taken with set_nx ("at most
// once an hour") keeps its TTL after its process is gone, and so does a
// Bound grant when lock_lease=0. A release ends the renewal; the holder's
// refresh keeps the lease and moves the TTL's end.
func TestOnlyABoundGrantHasALease(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr+"?lock_lease=1s")
	lease := time.Second

	out, err := s.SetNX("once-an-hour", []byte("t"), time.Hour)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	assert.Greater(t, leftOf(t, s, "once-an-hour"), 59*time.Minute, "set_nx keeps its TTL")
	unbound := backend.Step{Lock: "unbound", Token: []byte("t"), LockTTL: time.Hour, Acquire: true}
	require.NoError(t, s.Step(&unbound))
	require.True(t, unbound.Held)
	assert.Greater(t, leftOf(t, s, "unbound"), 59*time.Minute, "a step that is not Bound keeps its TTL")
	assert.Zero(t, s.renew.count())

	lock := sessionkeys.LockKey("lease")
	st := boundStep(lock, []byte("holder"), time.Minute)
	require.NoError(t, s.Step(&st))
	require.True(t, st.Held)
	assert.LessOrEqual(t, leftOf(t, s, lock), lease, "a Bound grant's PX is its lease")
	assert.Positive(t, leftOf(t, s, lock))
	assert.Equal(t, 1, s.renew.count())

	refreshed, err := s.ExpireIfEq(lock, []byte("holder"), time.Hour)
	require.NoError(t, err)
	require.True(t, refreshed)
	assert.LessOrEqual(t, leftOf(t, s, lock), lease, "the refresh of a leased lock keeps the lease")
	refreshed, err = s.ExpireIfEq(lock, []byte("holder"), 300*time.Millisecond)
	require.NoError(t, err)
	require.True(t, refreshed)
	assert.LessOrEqual(t, leftOf(t, s, lock), 300*time.Millisecond, "a refresh shorter than the lease is the TTL")
	assert.Equal(t, 1, s.renew.count(), "renewed until the refreshed TTL ends")
	released, err := s.DelIfEq(lock, []byte("holder"))
	require.NoError(t, err)
	require.True(t, released)
	assert.Zero(t, s.renew.count(), "a release ends the renewal")

	// lock_refresh and lock_release of a Bound grant (ephpm_kv_lock(bound:
	// true)) do what ExpireIfEq and DelIfEq do.
	st = boundStep(lock, []byte("rw"), time.Minute)
	require.NoError(t, s.Step(&st))
	require.True(t, st.Held)
	refreshed, err = s.LockRefresh(lock, []byte("rw"), time.Hour)
	require.NoError(t, err)
	require.True(t, refreshed)
	assert.LessOrEqual(t, leftOf(t, s, lock), lease, "lock_refresh of a leased lock keeps the lease")
	assert.Equal(t, 1, s.renew.count())
	refreshed, err = s.LockRefresh(lock, []byte("other"), time.Hour)
	require.NoError(t, err)
	require.False(t, refreshed)
	released, err = s.LockRelease(lock, []byte("rw"))
	require.NoError(t, err)
	require.True(t, released)
	assert.Zero(t, s.renew.count(), "lock_release ends the renewal")

	st = boundStep(lock, []byte("again"), time.Minute)
	require.NoError(t, s.Step(&st))
	require.True(t, st.Held)
	rel := backend.Step{Lock: lock, Token: []byte("again"), Guard: backend.GuardFenceHolder, Fence: st.Fence,
		Action: backend.ActionSet, Key: sessionkeys.DataKey("lease"), Value: []byte("data"), Release: true}
	require.NoError(t, s.Step(&rel))
	require.True(t, rel.Released)
	assert.Zero(t, s.renew.count(), "a step's release ends the renewal")

	short := boundStep(sessionkeys.LockKey("short"), []byte("t"), 500*time.Millisecond)
	require.NoError(t, s.Step(&short))
	require.True(t, short.Held)
	assert.LessOrEqual(t, leftOf(t, s, short.Lock), 500*time.Millisecond)
	assert.Zero(t, s.renew.count(), "a TTL within the lease is not renewed")

	off := open(t, "redis://"+srv.Addr+"?lock_lease=0")
	st = boundStep(sessionkeys.LockKey("off"), []byte("t"), time.Hour)
	require.NoError(t, off.Step(&st))
	require.True(t, st.Held)
	assert.Greater(t, leftOf(t, off, st.Lock), 59*time.Minute, "lock_lease=0: a Bound grant keeps its TTL")
	assert.Zero(t, off.renew.count())
}

// The renewals keep a Bound lock for its TTL and no longer: every
// expiry the server holds (PEXPIRETIME) is within the TTL counted from the
// grant, on the server's clock (read after the step returned: no earlier
// than the grant), and once the TTL has passed there the key is gone and
// stays gone, its renewal ended.
func TestARenewalNeverOutlastsTheLocksTTL(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr+"?lock_lease=200ms")
	lock := sessionkeys.LockKey("ttl")
	const ttl = 1500 * time.Millisecond
	st := boundStep(lock, []byte("holder"), ttl)
	require.NoError(t, s.Step(&st))
	require.True(t, st.Held)
	// The TTL's end on the server's clock, read once the grant is made:
	// no later than the grant's own end, and read by the clock that
	// expires the key, so that neither this host's scheduler nor a clock
	// read here moves it.
	end := serverNow(t, s).Add(ttl)
	for {
		r, err := s.do(nil, "pexpiretime", testKey(lock))
		require.NoError(t, err)
		if r.n < 0 {
			break
		}
		require.LessOrEqual(t, leftOf(t, s, lock), 200*time.Millisecond, "no more than a lease at a time")
		expiry := time.UnixMilli(r.n)
		require.False(t, expiry.After(end), "an expiry %v past the TTL's end", expiry.Sub(end))
		time.Sleep(10 * time.Millisecond) // the pace of the observations, nothing waits on it
	}
	for serverNow(t, s).Before(end.Add(time.Millisecond)) {
		time.Sleep(10 * time.Millisecond)
	}
	v, found, err := get(t, s, lock)
	require.NoError(t, err)
	require.False(t, found, "the TTL has passed: %q", v)
	assert.True(t, s.renew.renew() == false || s.renew.count() == 0, "the renewal ended")
	_, found, err = get(t, s, lock)
	require.NoError(t, err)
	require.False(t, found, "a renewal after the TTL brings nothing back")
}

// A renewal after the lock lapsed or went to another holder changes
// nothing: the lapsed key stays gone, the other holder's lock keeps its
// TTL, and the holder stops renewing it.
func TestALateRenewalDoesNotResurrect(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr+"?lock_lease=1s")
	lock := sessionkeys.LockKey("late")
	st := boundStep(lock, []byte("holder"), time.Minute)
	require.NoError(t, s.Step(&st))
	require.True(t, st.Held)
	_, err := s.do(nil, "del", testKey(lock)) // as if it lapsed
	require.NoError(t, err)
	s.renew.renew()
	_, found, err := get(t, s, lock)
	require.NoError(t, err)
	assert.False(t, found, "a lapsed lock stays gone")
	assert.Zero(t, s.renew.count(), "the holder stopped renewing it")

	st = boundStep(lock, []byte("holder2"), time.Minute)
	require.NoError(t, s.Step(&st))
	require.True(t, st.Held)
	_, err = s.do(nil, "set", testKey(lock), "other", "px", int64(time.Hour/time.Millisecond)) // another holder's
	require.NoError(t, err)
	s.renew.renew()
	v, _, err := get(t, s, lock)
	require.NoError(t, err)
	assert.Equal(t, "other", string(v))
	assert.Greater(t, leftOf(t, s, lock), 59*time.Minute, "the other holder's TTL is untouched")
	assert.Zero(t, s.renew.count())
	ok, err := backend.SetGuarded(s, sessionkeys.DataKey("late"), []byte("v"), 0, lock, []byte("holder2"))
	require.NoError(t, err)
	assert.False(t, ok, "the holder's guarded write is refused")
}

// TestLeaseHolderChild, in a child process (the test binary run again),
// holds Bound locks on LEASE_URL as the session handler does, taking
// commands on stdin and answering each with one line beginning "child:".
func TestLeaseHolderChild(t *testing.T) {
	url := os.Getenv("LEASE_URL")
	if url == "" {
		t.Skip("the child of the lease tests")
	}
	s := open(t, url)
	var st backend.Step
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		var answer string
		switch f[0] {
		case "take": // take LOCK TOKEN
			st = boundStep(f[1], []byte(f[2]), time.Minute)
			err := s.Step(&st)
			answer = fmt.Sprintf("%v %d %v", st.Held, st.Fence, err)
		case "renewing":
			answer = strconv.Itoa(s.renew.count())
		case "write": // the token guard
			ok, err := backend.SetGuarded(s, "data", []byte("child"), 0, st.Lock, st.Token)
			answer = fmt.Sprintf("%v %v", ok, err)
		case "fencewrite": // the session handler's guard
			w := backend.Step{Lock: st.Lock, Token: st.Token, Guard: backend.GuardFenceHolder, Fence: st.Fence,
				Action: backend.ActionSet, Key: "data", Value: []byte("child")}
			err := s.Step(&w)
			answer = fmt.Sprintf("%v %v", w.Held, err)
		}
		fmt.Println("child: " + answer)
	}
}

// leaseChild is a running TestLeaseHolderChild.
type leaseChild struct {
	cmd *exec.Cmd
	in  io.Writer
	out *bufio.Scanner
}

func startLeaseChild(t *testing.T, url string) *leaseChild {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestLeaseHolderChild$")
	cmd.Env = append(os.Environ(), "LEASE_URL="+url)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &leaseChild{cmd, in, bufio.NewScanner(out)}
}

// send sends a command and returns the child's answer.
func (c *leaseChild) send(t *testing.T, cmd string) string {
	t.Helper()
	_, err := fmt.Fprintln(c.in, cmd)
	require.NoError(t, err)
	for c.out.Scan() {
		if a, ok := strings.CutPrefix(c.out.Text(), "child: "); ok {
			return a
		}
	}
	t.Fatalf("the child ended before answering %q: %v", cmd, c.out.Err())
	return ""
}

// lapsesWithinItsPTTL asserts that lock, whose holder no longer renews
// it, has a lease left at most, and is gone once that has passed on the
// server's clock (it was read before its answer came back).
func lapsesWithinItsPTTL(t *testing.T, s *Store, lock string, lease time.Duration) {
	t.Helper()
	p := leftOf(t, s, lock)
	if p < 0 {
		return // already gone
	}
	require.LessOrEqual(t, p, lease, "a lease left at most")
	time.Sleep(p + time.Millisecond) // the server's expiry passing, not an order
	_, found, err := get(t, s, lock)
	require.NoError(t, err)
	require.False(t, found, "lapsed within the lease")
}

// A live holder (another process, whose renewals run on their own while
// it does nothing else) keeps its Bound lock past several leases, each
// look finding no more than a lease left; killed, its lock lapses within
// the lease. The pace of the holder's renewals is asserted only as the
// lease promises it: three renewals in a row later than three quarters
// of a lease would lose the lock.
func TestALiveHolderKeepsItsLeaseAndAKilledOneLosesIt(t *testing.T) {
	srv := redistest.Start(t)
	const lease = time.Second
	url := "redis://" + srv.Addr + "?lock_lease=1s"
	s := open(t, url)
	c := startLeaseChild(t, url)
	lock := sessionkeys.LockKey("killed")
	require.Equal(t, "true", strings.Fields(c.send(t, "take "+lock+" child"))[0])
	for start := time.Now(); time.Since(start) < 4*lease; time.Sleep(50 * time.Millisecond) {
		v, found, err := get(t, s, lock)
		require.NoError(t, err)
		require.True(t, found, "the live holder lost its lock after %v", time.Since(start))
		require.Equal(t, "child", string(v))
		require.LessOrEqual(t, leftOf(t, s, lock), lease)
	}
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	c.cmd.Wait()
	lapsesWithinItsPTTL(t, s, lock, lease)
	out, err := s.SetNX(lock, []byte("next"), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, contract.Inserted, out, "the next holder has it")
}

// A holder stopped (SIGSTOP: a wedged process, a machine that froze)
// renews nothing, and its lock lapses within the lease; resumed, its late
// renewal brings back nothing, whether the lock is gone or another
// holder's, and it stops renewing. Its guarded writes then go as the
// guards say: the token guard is refused; the fence guard (the session
// handler's) only refuses once another was granted the lock, which is when
// the write could overwrite another's.
func TestAStoppedHolderLosesItsLockAndKnowsIt(t *testing.T) {
	srv := redistest.Start(t)
	const lease = time.Second
	url := "redis://" + srv.Addr + "?lock_lease=1s"
	s := open(t, url)
	c := startLeaseChild(t, url)
	lock := sessionkeys.LockKey("stopped")
	stopped := func() {
		require.NoError(t, c.cmd.Process.Signal(syscall.SIGSTOP))
		lapsesWithinItsPTTL(t, s, lock, lease)
	}
	resumed := func() {
		require.NoError(t, c.cmd.Process.Signal(syscall.SIGCONT))
		for deadline := time.Now().Add(hangCatch); c.send(t, "renewing") != "0"; time.Sleep(10 * time.Millisecond) {
			require.True(t, time.Now().Before(deadline), "the resumed holder still renews its lost lock")
		}
	}

	require.Equal(t, "true", strings.Fields(c.send(t, "take "+lock+" first"))[0])
	stopped()
	resumed()
	_, found, err := get(t, s, lock)
	require.NoError(t, err)
	assert.False(t, found, "the resumed holder's renewal brought back nothing")
	assert.Equal(t, "false <nil>", c.send(t, "write"), "the token guard refuses the write")
	assert.Equal(t, "true <nil>", c.send(t, "fencewrite"), "nobody was granted the lock since: the fence guard holds")

	require.Equal(t, "true", strings.Fields(c.send(t, "take "+lock+" second"))[0])
	stopped()
	out, err := s.SetNX(lock, []byte("other"), time.Hour)
	require.NoError(t, err)
	require.Equal(t, contract.Inserted, out)
	resumed()
	v, _, err := get(t, s, lock)
	require.NoError(t, err)
	assert.Equal(t, "other", string(v))
	assert.Greater(t, leftOf(t, s, lock), 59*time.Minute, "the other holder's TTL is untouched")
	assert.Equal(t, "false <nil>", c.send(t, "write"), "the token guard refuses the write")
	assert.Equal(t, "false <nil>", c.send(t, "fencewrite"), "the lock is another's: the fence guard refuses the write")
}

// On a Cluster each slot's locks are renewed by a script of their own, on
// the node that owns them, with that node's clock: locks on every node
// outlive their lease while held, and each lapses at its TTL.
func TestLeasesOnACluster(t *testing.T) {
	nodes := redistest.StartCluster(t)
	const lease = time.Second
	s := open(t, clusterURL(nodes)+"?lock_lease=1s")
	var locks []string
	nodesOf := map[string]bool{}
	for i := 0; len(nodesOf) < len(nodes) && i < 1000; i++ {
		lock := sessionkeys.LockKey("c" + strconv.Itoa(i))
		if node := s.renew.node(testKey(lock)); !nodesOf[node] {
			nodesOf[node] = true
			locks = append(locks, lock)
		}
	}
	require.Len(t, locks, len(nodes), "a lock on every master")
	const ttl = 3 * time.Second
	for _, lock := range locks {
		st := boundStep(lock, []byte("holder"), ttl)
		require.NoError(t, s.Step(&st))
		require.True(t, st.Held)
	}
	granted := time.Now()
	// Past the lease, renewed (three renewals may be late: see leasePeriod).
	time.Sleep(time.Until(granted.Add(2 * lease)))
	for _, lock := range locks {
		p := leftOf(t, s, lock)
		assert.Positive(t, p, "%s renewed past its lease", lock)
		assert.LessOrEqual(t, p, lease)
	}
	// Past the TTL, gone: no renewal outlives it.
	time.Sleep(time.Until(granted.Add(ttl + time.Millisecond)))
	for _, lock := range locks {
		_, found, err := get(t, s, lock)
		require.NoError(t, err)
		assert.False(t, found, "%s outlived its TTL", lock)
	}
}

// serverNow is the server's clock (TIME).
func serverNow(t *testing.T, s *Store) time.Time {
	t.Helper()
	now, err := s.c.Time(ctx).Result()
	require.NoError(t, err)
	return now
}
