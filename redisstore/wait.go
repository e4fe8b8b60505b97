package redisstore

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// hub serves Wait for the whole process over one pub/sub connection: a
// release (Del, DelIfEq) publishes on the key's channels, and the hub wakes
// this process's oldest waiter for that key, or the head of its line. The connection is opened on
// the first wait; channels are subscribed while someone waits on them.
//
// The hub has a client of its own whose connections wait on Go's network
// poller: its reader is a background goroutine that waits for the life of
// the process, and a threadConn's raw wait would hold a P for up to
// rawWaitLimit after every message; with one P (GOMAXPROCS=1, a container
// limited to one CPU) every PHP call and timer of the process then waited
// ~10 ms behind each release (TestHubReaderDoesNotHoldAP).
type hub struct {
	c redis.UniversalClient // the hub's own

	// subMu orders SUBSCRIBE and UNSUBSCRIBE, so that the last waiter's
	// leaving cannot unsubscribe a channel a new waiter just subscribed.
	subMu sync.Mutex

	mu      sync.Mutex
	ps      *redis.PubSub
	waiters map[string][]*waiter     // channel -> waiters, oldest first
	pongs   map[string]chan struct{} // a PING's payload -> its waiter (see stood)
	pinged  uint64                   // PINGs sent, for their payloads
	closed  bool
}

// waiter is one caller blocked in Wait (id "") or WaitTurn (its place in
// the key's line, see queue.go; on a standalone server WaitTurn waits on a
// connection of its own instead: turnwait.go).
//
// A caller stands in two channels' queues (wait): the key's release
// channel (onRelease) and its head channel or the key's named channel,
// with one waiter for each, which share ch and woken. A channel's name can
// be two keys' at once (a key that ends in a NUL byte, releaseChannel), so
// each waiter takes only the messages of its own kind of channel.
type waiter struct {
	ch        chan struct{}
	id        string
	onRelease bool
	// woken is set (under the hub's mu) by the first wake: a caller
	// already woken from one queue takes no second wake from the other,
	// which would be lost to the waiter behind it.
	woken *bool
	// answer is set with woken by a message on the head channel that
	// carries the answer of a step the release made for the waiter
	// (handover.go): what follows its id and a space.
	answer *string
}

func newHub(c redis.UniversalClient) *hub {
	return &hub{c: c, waiters: map[string][]*waiter{}, pongs: map[string]chan struct{}{}}
}

// hubIdle is how long the hub's reader waits for a push before it sends a
// PING, so that a connection that died silently errors (and go-redis dials
// it again, subscribing its channels anew).
const hubIdle = 30 * time.Second

// start opens the pub/sub connection and its reader. Caller holds mu.
func (h *hub) start() {
	ps := h.c.Subscribe(ctx)
	h.ps = ps
	go func() {
		failures := 0
		for {
			m, err := ps.ReceiveTimeout(ctx, hubIdle)
			if err != nil {
				h.mu.Lock()
				closed := h.closed
				h.mu.Unlock()
				var ne net.Error
				switch {
				case closed || errors.Is(err, redis.ErrClosed):
					return
				case errors.As(err, &ne) && ne.Timeout():
					ps.Ping(ctx)
				default:
					// go-redis dials again on the next receive; not in a
					// tight loop while the server is down.
					failures++
					time.Sleep(min(time.Duration(failures)*10*time.Millisecond, time.Second))
				}
				continue
			}
			failures = 0
			h.mu.Lock()
			switch m := m.(type) {
			case *redis.Message:
				// Only a queue someone waits in: a message after the last
				// waiter left must not make an entry, which would keep the
				// channel subscribed for good (a head's channel is never
				// waited on again).
				if q, ok := h.waiters[m.Channel]; ok {
					h.waiters[m.Channel] = wake(q, m.Payload)
				}
			case *redis.Pong:
				if c, ok := h.pongs[m.Payload]; ok {
					close(c)
					delete(h.pongs, m.Payload)
				}
			}
			h.mu.Unlock()
		}
	}()
}

// stood waits for at most timeout until the SUBSCRIBE just written on ps
// stands on the server: a PING sent after it on the same connection comes
// back after its confirmation. A look before then could miss a release
// that came between the look and the SUBSCRIBE's arrival, and its waiter
// would sleep until its timeout.
func (h *hub) stood(ps *redis.PubSub, timeout time.Duration) {
	h.mu.Lock()
	h.pinged++
	payload := "ephpm:stood:" + strconv.FormatUint(h.pinged, 10)
	c := make(chan struct{})
	h.pongs[payload] = c
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.pongs, payload)
		h.mu.Unlock()
	}()
	if ps.Ping(ctx, payload) != nil {
		return
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c:
	case <-t.C:
	}
}

// wakeEveryone is the release message that wakes every waiter on the
// key: a read lock's last reader publishes it when it leaves a waiting
// writer's claim alone in the name, so that the writer wakes wherever it
// stands in each process's queue (rwlock.go). Waiter ids are hex, so no
// line's head is named "*".
const wakeEveryone = "*"

// wake wakes the waiters of one channel's queue q that a release message
// is for and returns the others. A release names the head of the key's
// line (WaitTurn's id) when it has one, on the head's channel and on the
// named channel (releaseChannel): that waiter is woken, and the oldest
// plain Wait (on the named channel, and on the release channel, where an
// earlier build names the head); a message naming nobody ("") wakes the
// oldest waiter of any kind on the release channel, who looks and waits
// again if it is not its turn; wakeEveryone wakes them all there. A
// message that names the head and carries its step's answer wakes the
// head alone, with the answer.
func wake(q []*waiter, payload string) []*waiter {
	// Waiters woken from another queue are gone from this one too.
	q = slices.DeleteFunc(q, func(w *waiter) bool { return *w.woken })
	tell := func(i int) {
		*q[i].woken = true
		q[i].ch <- struct{}{}
	}
	woke := func(match func(w *waiter) bool) {
		if i := slices.IndexFunc(q, match); i >= 0 {
			tell(i)
			q = append(q[:i:i], q[i+1:]...)
		}
	}
	switch payload {
	case wakeEveryone:
		for i := range q {
			if q[i].onRelease {
				tell(i)
			}
		}
		return slices.DeleteFunc(q, func(w *waiter) bool { return w.onRelease })
	case "":
		woke(func(w *waiter) bool { return w.onRelease })
		return q
	}
	if id, answer, ok := strings.Cut(payload, " "); ok {
		// A step made for the head, on its own channel only.
		if i := slices.IndexFunc(q, func(w *waiter) bool { return w.id == id && !w.onRelease }); i >= 0 {
			*q[i].answer = answer
			tell(i)
			q = append(q[:i:i], q[i+1:]...)
		}
		return q
	}
	woke(func(w *waiter) bool { return w.id == payload })
	woke(func(w *waiter) bool { return w.id == "" && w.onRelease })
	woke(func(w *waiter) bool { return w.id == "" && !w.onRelease })
	return q
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.ps != nil {
		h.ps.Close()
	}
	h.c.Close()
}

// Wait blocks for at most timeout until key is released (or, checked once
// the subscription stands, is already free), and reports whether it is
// free. A key that expires rather than being released is noticed when the
// timeout ends: callers wait one backoff step at most.
func (s *Store) Wait(key string, timeout time.Duration) (bool, error) {
	turn, _, err := s.wait(key, "", timeout, func() (bool, time.Duration, error) {
		held, err := s.Exists(key)
		if err != nil || !held {
			return !held, 0, err
		}
		ttl, found, err := s.PTTL(key)
		if err != nil || !found {
			return false, -1, nil
		}
		return false, ttl, nil
	})
	return turn, err
}

// wait registers a waiter with id on key's release channel, subscribes,
// and then looks (a release before the subscription stood would be
// missed): look says whether to return at once (true), else the key's TTL
// (-1: none), by which the wait is cut short. Then it waits for a message
// for it or the timeout; answer is a step's answer the message carried
// (waitTurnDirect).
func (s *Store) wait(key, id string, timeout time.Duration, look func() (bool, time.Duration, error)) (turn bool, answer string, err error) {
	ch := releaseChannel(s.redisKey(key))
	// The waiter listens on the key's release channel and on the one that
	// names it (a head of the line: its own) or names anybody (Wait).
	chans := [2]string{ch, namedChannel(ch)}
	if id != "" {
		chans[1] = headChannel(ch, id)
	}
	h := s.hub
	woke, woken := make(chan struct{}, 1), false
	ws := [2]*waiter{{ch: woke, id: id, onRelease: true, woken: &woken, answer: &answer},
		{ch: woke, id: id, woken: &woken, answer: &answer}}

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return false, "", redis.ErrClosed
	}
	if h.ps == nil {
		h.start()
	}
	for i, c := range chans {
		h.waiters[c] = append(h.waiters[c], ws[i])
	}
	ps := h.ps
	h.mu.Unlock()
	defer h.leave(chans[:], woke)

	h.subMu.Lock()
	err = ps.Subscribe(ctx, chans[:]...) // idempotent for a channel already subscribed
	h.subMu.Unlock()
	if err != nil {
		return false, "", err
	}
	start := time.Now()
	h.stood(ps, timeout)
	timeout -= time.Since(start)
	now, ttl, err := look()
	if err != nil {
		return false, "", err
	}
	if now || timeout <= 0 {
		return now, "", nil
	}
	// It expires sooner: wake then. PTTL counts whole milliseconds left,
	// rounded down, so a wake at ttl can come just before the expiry: a
	// millisecond later it is gone.
	if ttl >= 0 && ttl+time.Millisecond < timeout {
		timeout = ttl + time.Millisecond
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-woke:
		// answer was set before the wake, under the hub's mu.
		h.mu.Lock()
		defer h.mu.Unlock()
		return true, answer, nil
	case <-t.C:
		return false, "", nil
	}
}

// leave removes the caller woken through woke from the queues of chans, and drops the subscription of
// each that nobody waits on any more in the background: the waiter, woken,
// makes its next attempt at once rather than after the UNSUBSCRIBE's write.
func (h *hub) leave(chans []string, woke chan struct{}) {
	var unused []string
	h.mu.Lock()
	for _, ch := range chans {
		q := slices.DeleteFunc(h.waiters[ch], func(x *waiter) bool { return x.ch == woke })
		if len(q) == 0 {
			delete(h.waiters, ch)
			unused = append(unused, ch)
		} else {
			h.waiters[ch] = q
		}
	}
	h.mu.Unlock()
	if len(unused) > 0 {
		go h.unsubscribe(unused)
	}
}

// unsubscribe drops the subscriptions of chans that nobody waits on
// again: one who came before the look below subscribes after or has
// subscribed already (SUBSCRIBE is idempotent), one who comes after it
// subscribes after this UNSUBSCRIBE (subMu).
func (h *hub) unsubscribe(chans []string) {
	h.subMu.Lock()
	defer h.subMu.Unlock()
	h.mu.Lock()
	unused := chans[:0]
	for _, ch := range chans {
		if _, waited := h.waiters[ch]; !waited {
			unused = append(unused, ch)
		}
	}
	ps := h.ps
	h.mu.Unlock()
	if len(unused) > 0 && ps != nil {
		ps.Unsubscribe(ctx, unused...)
	}
}

// releaseChannel is where a release of key is announced to waiters.
// Every waiter listens there, for the messages that name nobody ("") or
// everyone (wakeEveryone). A message naming the head of the key's line
// goes instead to that waiter's own channel (headChannel) and to the one
// Wait's waiters listen on besides (namedChannel), so that it wakes the
// head and each process's oldest Wait, not every waiter in line: on a
// standalone server each waits on a connection of its own (turnwait.go),
// and one channel for all of them woke every waiting thread of every
// process at each hand-over, of whom one went on. tellHeadLua publishes
// so. Both are the release channel and a NUL byte (channelSep) after it,
// so that a user whose ACL allows "&ephpm:released:*" reaches them; only
// a key that itself ends in NUL (and a waiter's id) names another key's
// channel, and a release of it wakes a waiter for nothing, who looks and
// waits again.
func releaseChannel(rkey string) string { return "ephpm:released:" + rkey }

// channelSep ends a release channel in the names of the channels beside
// it: no key of ephpm's own (sessions, locks) holds a NUL byte.
const channelSep = "\x00"

// headChannel is where a release names waiter id, the head of the line
// of the key whose release channel is ch.
func headChannel(ch, id string) string { return ch + channelSep + id }

// namedChannel is where Wait's waiters on the key whose release channel
// is ch hear the releases that name a head.
func namedChannel(ch string) string { return ch + channelSep }
