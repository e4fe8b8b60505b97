package redisstore

import (
	"errors"
	"os"
	"time"
)

// On a standalone server a waiter in line waits for its turn on a
// subscriber connection of its own, read on its own thread as direct's
// commands are (threadConn), instead of through the hub. The hub's
// message reaches the waiter through two thread wake-ups in its process
// (Go's network poller's thread for the pub/sub read, then the waiter's
// thread, to which its goroutine is locked); a read on the waiter's own
// thread is one, and the hand-off of a session lock is that much shorter
// (docs/measurements.md, "Sessions on Redis: where a hand-off's time
// goes"). The SUBSCRIBE's confirmation is read before the look, so a
// release after the look always reaches the waiter.
//
// A subscriber connection stays subscribed to nothing between waits: the
// waiter's UNSUBSCRIBE is written when it leaves and its confirmation
// read by the next waiter to take the connection, which reads and drops
// whatever comes before the confirmation of its own SUBSCRIBE.

// subscriber takes an idle subscriber connection, or dials one.
func (d *direct) subscriber() (c *wireConn, reused bool, err error) {
	d.mu.Lock()
	if n := len(d.subs); n > 0 {
		c = d.subs[n-1]
		d.subs = d.subs[:n-1]
	}
	closed := d.closed
	d.mu.Unlock()
	if c != nil {
		return c, true, nil
	}
	if closed {
		return nil, false, errClosedStore
	}
	c, err = d.connect()
	return c, false, err
}

var errClosedStore = errors.New("redis: client is closed")

// putSubscriber keeps a subscriber connection for the next waiter, or
// closes it if the store is closed.
func (d *direct) putSubscriber(c *wireConn) {
	d.mu.Lock()
	if !d.closed {
		d.subs = append(d.subs, c)
		c = nil
	}
	d.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// subscribe writes SUBSCRIBE ch own on c and reads up to the confirmation
// of own, which comes last.
func (d *direct) subscribe(c *wireConn, ch, own string) error {
	by := deadline(time.Now(), d.readTimeout)
	c.wbuf = appendCommand(c.wbuf[:0], []any{"subscribe", ch, own})
	if err := c.nc.SetWriteDeadline(deadline(time.Now(), d.writeTimeout)); err != nil {
		return err
	}
	if _, err := c.nc.Write(c.wbuf); err != nil {
		return err
	}
	if err := c.nc.SetReadDeadline(by); err != nil {
		return err
	}
	for {
		kind, channel, _, _, err := c.readPush()
		if err != nil {
			return err
		}
		if kind == "subscribe" && channel == own {
			return nil
		}
	}
}

// readPush reads one pub/sub push: its kind ("message", "subscribe",
// "unsubscribe"), channel, and payload (a message's) or count. begun says
// whether any of it was read: after an error with begun false the
// connection is still in step with the server.
func (c *wireConn) readPush() (kind, channel, payload string, begun bool, err error) {
	line, err := c.readLine()
	if err != nil {
		return "", "", "", false, err
	}
	if len(line) != 2 || line[0] != '*' || line[1] != '3' {
		return "", "", "", true, errProtocol
	}
	var parts [3]string
	for i := range parts {
		r, err := c.readReply(nil)
		if err != nil {
			return "", "", "", true, err
		}
		parts[i] = string(r.b)
	}
	return parts[0], parts[1], parts[2], true, nil
}

// waitTurnDirect is wait for waiter id of rk's line on a subscriber
// connection: SUBSCRIBE to ch and id's head channel (confirmed), look,
// then read messages until one names id (or nobody) or timeout passes;
// answer is what follows id and a space in a message on id's head
// channel, the answer of a step the release did for id (handover.go), and
// "" for a plain message. A connection that fails is closed and the wait
// ends as a timeout would (the caller's next attempt meets the server's
// state, or its failure); only a failure to subscribe is returned.
func (s *Store) waitTurnDirect(ch, id string, timeout time.Duration, look func() (bool, time.Duration, error)) (turn bool, answer string, err error) {
	d := s.direct
	own := headChannel(ch, id)
	c, reused, err := d.subscriber()
	if err != nil {
		return false, "", err
	}
	if err = d.subscribe(c, ch, own); err != nil && reused {
		// The server may have closed an idle connection: one more, new.
		c.close()
		if c, err = d.connect(); err == nil {
			err = d.subscribe(c, ch, own)
		}
	}
	if err != nil {
		if c != nil {
			c.close()
		}
		return false, "", err
	}
	keep := true
	defer func() {
		if keep {
			c.wbuf = appendCommand(c.wbuf[:0], []any{"unsubscribe", ch, own})
			c.nc.SetWriteDeadline(deadline(time.Now(), d.writeTimeout))
			if _, err := c.nc.Write(c.wbuf); err != nil {
				keep = false
			}
		}
		if keep {
			d.putSubscriber(c)
		} else {
			c.close()
		}
	}()
	now, ttl, err := look()
	if err != nil || now {
		return now, "", err
	}
	if ttl >= 0 && ttl+time.Millisecond < timeout {
		timeout = ttl + time.Millisecond
	}
	if err := c.nc.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		keep = false
		return false, "", nil
	}
	for {
		kind, channel, payload, begun, err := c.readPush()
		if err != nil {
			// The timeout before a push began leaves the connection in
			// step; a failure, or a timeout mid-push, does not.
			keep = !begun && errors.Is(err, os.ErrDeadlineExceeded)
			return false, "", nil
		}
		if kind != "message" || channel != ch && channel != own {
			continue
		}
		if payload == id || payload == "" || payload == wakeEveryone {
			return true, "", nil
		}
		if channel == own && len(payload) > len(id) && payload[len(id)] == ' ' && payload[:len(id)] == id {
			return true, payload[len(id)+1:], nil
		}
	}
}
