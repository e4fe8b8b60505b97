package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// direct carries the store's commands to a standalone server over its own
// small pool of wireConns, instead of through go-redis.
//
// Why: a command's cost on the PHP thread is its CPU, and go-redis spends
// more than phpredis per command (a pool with connection state machines
// and metrics hooks, a Cmd object and its arguments on the heap, several
// clock reads for deadlines, a RESP3 push check), which showed as a longer
// time per GET than phpredis's with the CPUs kept busy (bench/run.sh;
// docs/measurements.md). direct does what phpredis does per command: check the
// idle connection with one non-blocking peek, write the command, wait for
// the reply on the calling thread (see threadConn), parse it in place.
//
// Only a standalone server is served this way: Cluster routing and
// Sentinel failover stay with go-redis, as do Wait's pub/sub (the hub),
// Stats and Flush; a waiter in line waits on a subscriber connection of
// direct's (turnwait.go).
//
// No command is retried: a connection that fails mid-command is closed,
// and the error (an unknown outcome) goes to the caller.
type direct struct {
	addr  string
	dial  func(ctx context.Context, addr string) (net.Conn, *threadConn, error)
	setup [][]any // sent on every new connection: AUTH, SELECT, CLIENT SETNAME
	// connected, if set, is called after each new connection is set up.
	connected func()

	// Timeouts as go-redis resolved them; 0 or less: no deadline.
	dialTimeout, readTimeout, writeTimeout, poolTimeout time.Duration

	slots chan struct{} // a token per connection in use or being dialed

	mu     sync.Mutex
	idle   []*wireConn // most recently used last
	subs   []*wireConn // idle subscriber connections (turnwait.go), outside slots
	closed bool
	// Dial failures in a row, the last one's error, and until when calls
	// fail with it instead of dialing (see dialPause).
	failedDials int
	dialErr     error
	pausedUntil time.Time
}

// dialPause: once as many dials in a row have failed as the pool has
// slots, calls fail at once with the last dial error for this long, after
// which one call dials again; go-redis's pool does the same. Without it,
// against a server whose connects hang, every call of every request waited
// the whole dial timeout (5 s by default).
const dialPause = time.Second

// newDirect serves the server o names, with o's credentials, database,
// timeouts and pool size as go-redis resolved them (defaults filled in).
func newDirect(o *redis.Options, dial func(context.Context, string) (net.Conn, *threadConn, error)) *direct {
	d := &direct{
		addr: o.Addr, dial: dial,
		dialTimeout: o.DialTimeout, readTimeout: o.ReadTimeout, writeTimeout: o.WriteTimeout, poolTimeout: o.PoolTimeout,
	}
	// A user name without a password authenticates as nobody (go-redis
	// does the same): the connection stays the default user's.
	switch {
	case o.Password != "" && o.Username != "":
		d.setup = append(d.setup, []any{"auth", o.Username, o.Password})
	case o.Password != "":
		d.setup = append(d.setup, []any{"auth", o.Password})
	}
	if o.DB != 0 {
		d.setup = append(d.setup, []any{"select", int64(o.DB)})
	}
	if o.ClientName != "" {
		d.setup = append(d.setup, []any{"client", "setname", o.ClientName})
	}
	size := o.PoolSize
	if size <= 0 {
		size = 10 * runtime.GOMAXPROCS(0)
	}
	d.slots = make(chan struct{}, size)
	return d
}

// errPoolTimeout: every connection stayed busy for the pool timeout.
var errPoolTimeout = errors.New("redis: connection pool timeout")

// do runs one command (see wireConn.roundTrip for dst). It may block for
// a connection (up to the pool timeout), a dial (the dial timeout) and the
// reply (the write and read timeouts); an error other than a server's
// error reply means the outcome is unknown.
func (d *direct) do(dst []byte, args []any) (reply, error) {
	c, err := d.get()
	if err != nil {
		return reply{}, err
	}
	now := monoBase.Add(time.Since(monoBase)) // time.Now, with one clock read instead of two
	r, err := c.roundTrip(dst, deadline(now, d.writeTimeout), deadline(now, d.readTimeout), args)
	var refused redisError
	d.put(c, err == nil || errors.As(err, &refused))
	return r, err
}

// doNative runs call's native form for the server behind the connection
// it takes, learning what that server has (INFO server) on the
// connection's first such call. It returns errScript, having run nothing
// of the member, where the form is nil or the server refused it unrun
// (see unrun); else the native command's reply and error, which the
// release's PUBLISH after it does not change.
func (d *direct) doNative(call *nativeCall) (reply, error) {
	c, err := d.get()
	if err != nil {
		return reply{}, err
	}
	now := monoBase.Add(time.Since(monoBase))
	if !c.learned {
		r, err := c.roundTrip(nil, deadline(now, d.writeTimeout), deadline(now, d.readTimeout), []any{"info", "server"})
		var refused redisError
		switch {
		case errors.As(err, &refused):
		case err != nil:
			d.put(c, false)
			return reply{}, err
		default:
			c.native = nativeOf(string(r.b))
		}
		c.learned = true
		now = monoBase.Add(time.Since(monoBase))
	}
	form := call.form(c.native)
	if form == nil {
		d.put(c, true)
		return reply{}, errScript
	}
	r, err, thenErr := c.roundTripThen(nil, deadline(now, d.writeTimeout), deadline(now, d.readTimeout), form, call.then)
	var refused redisError
	inStep := (err == nil || errors.As(err, &refused)) && (thenErr == nil || errors.As(thenErr, &refused))
	if script, forget := unrun(err); script {
		if forget {
			c.native &^= call.uses
		}
		d.put(c, inStep)
		return reply{}, errScript
	}
	d.put(c, inStep)
	return r, err
}

func deadline(now time.Time, timeout time.Duration) time.Time {
	if timeout <= 0 {
		return time.Time{}
	}
	return now.Add(timeout)
}

// get takes a slot, then the most recently used idle connection that is
// still alive, or dials one.
func (d *direct) get() (*wireConn, error) {
	select {
	case d.slots <- struct{}{}:
	default:
		t := time.NewTimer(d.poolTimeout)
		select {
		case d.slots <- struct{}{}:
			t.Stop()
		case <-t.C:
			return nil, errPoolTimeout
		}
	}
	for {
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			<-d.slots
			return nil, redis.ErrClosed
		}
		n := len(d.idle)
		if n == 0 {
			d.mu.Unlock()
			break
		}
		c := d.idle[n-1]
		d.idle = d.idle[:n-1]
		d.mu.Unlock()
		if c.idleAndAlive() {
			return c, nil
		}
		c.close() // closed by the server (a restart, its idle timeout): dial anew
	}
	if err := d.dialAllowed(); err != nil {
		<-d.slots
		return nil, err
	}
	c, err := d.connect()
	d.dialed(err)
	if err != nil {
		<-d.slots
		return nil, err
	}
	if d.connected != nil {
		d.connected()
	}
	return c, nil
}

// dialAllowed reports the last dial error while dialing is paused; the
// first call after the pause dials, and the pause covers the others
// meanwhile.
func (d *direct) dialAllowed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failedDials < cap(d.slots) {
		return nil
	}
	now := time.Now()
	if now.Before(d.pausedUntil) {
		return fmt.Errorf("%w (not dialing again for up to %v after %d failed dials)", d.dialErr, dialPause, d.failedDials)
	}
	d.pausedUntil = now.Add(dialPause)
	return nil
}

// dialed counts a dial's outcome.
func (d *direct) dialed(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		d.failedDials = 0
		return
	}
	d.failedDials++
	d.dialErr = err
	if d.failedDials >= cap(d.slots) {
		// From the end of the failed dial: a dial longer than the pause
		// must not let the next call start another one meanwhile.
		d.pausedUntil = time.Now().Add(dialPause)
	}
}

// connect dials and sends the setup commands, all within the dial timeout.
func (d *direct) connect() (*wireConn, error) {
	ctx := context.Background()
	if d.dialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.dialTimeout)
		defer cancel()
	}
	nc, raw, err := d.dial(ctx, d.addr)
	if err != nil {
		return nil, err
	}
	c := newWireConn(nc, raw)
	by, _ := ctx.Deadline()
	for _, cmd := range d.setup {
		if _, err := c.roundTrip(nil, by, by, cmd); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// put gives a connection back: to the idle list when it is in step with
// the server, else closed.
func (d *direct) put(c *wireConn, reusable bool) {
	d.mu.Lock()
	if reusable && !d.closed {
		d.idle = append(d.idle, c)
		c = nil
	}
	d.mu.Unlock()
	if c != nil {
		c.close()
	}
	<-d.slots
}

// close closes the idle connections, and those in use as they come back.
func (d *direct) close() {
	d.mu.Lock()
	d.closed = true
	idle := append(d.idle, d.subs...)
	d.idle, d.subs = nil, nil
	d.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}
