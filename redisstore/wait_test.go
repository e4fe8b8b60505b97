package redisstore

import (
	"io"
	"net"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/internal/redistest"
)

// The hub's pub/sub reader runs in the background for the life of the
// process; it must wait for messages without holding a P, or with one P
// (a container limited to one CPU) every PHP call and timer waits behind
// it. With one P, a 1 ms sleep right after a release was published (the
// reader has the message to deliver and then waits for the next one) ends
// only once the reader lets the P go: at once if it waits as a goroutine,
// never before its next message if it holds the P. The bound tells the
// two apart, not how fast this host runs a woken goroutine.
func TestHubReaderDoesNotHoldAP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	var sleeps []time.Duration
	for i := 0; i < 15; i++ {
		require.NoError(t, s.Set("w", []byte("held"), 0))
		done := make(chan struct{})
		var woken bool
		var waitErr error
		go func() {
			defer close(done)
			woken, waitErr = s.Wait("w", 5*hangCatch)
		}()
		// The wait's SUBSCRIBE stands (or the wait ended: it failed).
		for by := time.Now().Add(hangCatch); ; time.Sleep(time.Millisecond) {
			select {
			case <-done:
				require.FailNow(t, "the wait ended before the release", "round %d: woken %v, %v", i, woken, waitErr)
			default:
			}
			n, err := s.c.PubSubNumSub(ctx, releaseChannel("w")).Result()
			if err == nil && n[releaseChannel("w")] == 1 {
				break
			}
			if time.Now().After(by) {
				require.FailNow(t, "the wait never stood subscribed", "round %d: NUMSUB %v, %v", i, n, err)
			}
		}
		_, err := s.Del("w") // publishes: the reader delivers it, then waits again
		require.NoError(t, err)
		start := time.Now()
		time.Sleep(time.Millisecond)
		sleeps = append(sleeps, time.Since(start))
		<-done
		require.NoError(t, waitErr, "round %d", i)
		require.True(t, woken, "round %d: the release woke the wait", i)
	}
	slices.Sort(sleeps)
	assert.Less(t, sleeps[len(sleeps)/2], hangCatch/2, "sorted: %v", sleeps)
}

// delayProxy forwards TCP connections to addr, delaying what the client
// sends by d (in order); replies come back at once.
func delayProxy(t *testing.T, addr string, d time.Duration) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); up.Close() })
			go io.Copy(c, up)
			chunks := make(chan []byte, 64)
			go func() {
				defer close(chunks)
				for {
					b := make([]byte, 4096)
					n, err := c.Read(b)
					if n > 0 {
						chunks <- b[:n]
					}
					if err != nil {
						return
					}
				}
			}()
			go func() {
				for b := range chunks {
					time.Sleep(d)
					if _, err := up.Write(b); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// A wait looks at the key only once its SUBSCRIBE stands on the server: a
// release between the look and the SUBSCRIBE's arrival would otherwise go
// unseen, and the waiter sleep its whole timeout. Here the hub's
// connection reaches the server 200 ms late, and the release comes while
// its SUBSCRIBE is on the way.
func TestAWaitLooksOnlyOnceItsSubscriptionStands(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "redis://"+srv.Addr)
	s.hub.close()
	s.hub = newHub(redis.NewClient(&redis.Options{Addr: delayProxy(t, srv.Addr, 200*time.Millisecond)}))
	// The hub's connection opens (its handshake's round trips included) on
	// a first wait, for a key that is free.
	free, err := s.Wait("free", hangCatch)
	require.NoError(t, err)
	require.True(t, free)
	require.NoError(t, s.Set("held", []byte("x"), time.Minute))
	done := make(chan bool, 1)
	go func() {
		free, err := s.Wait("held", 5*hangCatch)
		assert.NoError(t, err)
		done <- free
	}()
	time.Sleep(50 * time.Millisecond) // the SUBSCRIBE is on its way
	_, err = s.Del("held")
	require.NoError(t, err)
	select {
	case free := <-done:
		assert.True(t, free)
	case <-time.After(hangCatch):
		t.Fatal("the release that came before the subscription stood was missed")
	}
}

// A caller stands in the queues of two channels; once woken from one, a
// message on the other wakes the waiter behind it, not it again.
func TestAWaiterWokenFromOneQueueTakesNoWakeFromTheOther(t *testing.T) {
	headWoken, nextWoken := false, false
	headCh, nextCh := make(chan struct{}, 1), make(chan struct{}, 1)
	release := []*waiter{ // the release channel's queue
		{ch: headCh, id: "head", onRelease: true, woken: &headWoken},
		{ch: nextCh, id: "next", onRelease: true, woken: &nextWoken},
	}
	own := []*waiter{{ch: headCh, id: "head", woken: &headWoken}} // the head's own channel's queue

	own = wake(own, "head")
	assert.Empty(t, own)
	assert.Len(t, headCh, 1, "the head is woken")
	release = wake(release, "")
	assert.Len(t, nextCh, 1, "a message naming nobody wakes the waiter behind the woken head")
	assert.Empty(t, release)
	assert.Len(t, headCh, 1, "the head is not told twice")
}

// One channel's name can be two keys' channels (a key that ends in NUL:
// releaseChannel): each waiter takes only its own kind of message there.
func TestAWaiterTakesOnlyItsOwnChannelsKindOfMessage(t *testing.T) {
	fresh := func(id string, onRelease bool) *waiter {
		woken := false
		return &waiter{ch: make(chan struct{}, 1), id: id, onRelease: onRelease, woken: &woken}
	}
	// "k" NUL is key k's named channel and key "k\x00"'s release channel.
	named := fresh("", false) // a Wait on k, first
	other := fresh("", true)  // a Wait on "k\x00"
	q := wake([]*waiter{named, other}, "")
	assert.Len(t, other.ch, 1, "a release of k\\0 naming nobody wakes its own waiter")
	assert.Empty(t, named.ch, "not k's, which waits for k's hand-overs")
	assert.Equal(t, []*waiter{named}, q)

	named, other = fresh("", false), fresh("", true)
	wake([]*waiter{other, named}, "someone")
	assert.Len(t, named.ch, 1, "a hand-over of k wakes k's oldest Wait")
	assert.Len(t, other.ch, 1, "and, as an earlier build's head-naming release may be for it, the other key's")

	named, other = fresh("", false), fresh("", true)
	q = wake([]*waiter{named, other}, wakeEveryone)
	assert.Len(t, other.ch, 1)
	assert.Empty(t, named.ch, "wakeEveryone is a release channel's message")
	assert.Equal(t, []*waiter{named}, q)
}

// A message on a head's channel after its waiter left (a second release
// naming it, before the UNSUBSCRIBE ran) must not leave the hub subscribed
// there for good: a head's channel is never waited on again.
func TestAHeadsChannelIsUnsubscribedAfterALateMessage(t *testing.T) {
	_, s, key := heldLock(t, "latemessage")
	s.direct = nil // the hub's path, as on a Cluster or through Sentinel
	ch := releaseChannel(testKey(key))
	numSub := func(ch string) int64 {
		n, err := s.c.PubSubNumSub(ctx, ch).Result()
		require.NoError(t, err)
		return n[ch]
	}
	var heads []string
	for i := 0; i < 20; i++ {
		id := "late" + strconv.Itoa(i)
		heads = append(heads, headChannel(ch, id))
		woke := make(chan bool, 1)
		waitTurn(t, s, key, id, woke)
		require.Eventually(t, func() bool { return numSub(headChannel(ch, id)) == 1 }, hangCatch, time.Millisecond)
		for j := 0; j < 2; j++ {
			require.NoError(t, s.c.Publish(ctx, headChannel(ch, id), id).Err())
		}
		turned(t, woke, "the head was not woken")
	}
	for _, c := range heads {
		require.Eventually(t, func() bool { return numSub(c) == 0 }, hangCatch, time.Millisecond, "%q still subscribed", c)
	}
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	for _, c := range heads {
		assert.NotContains(t, s.hub.waiters, c)
	}
}
