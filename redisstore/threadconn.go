package redisstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// threadConn is a connection to Redis whose reads and writes wait in the
// kernel on the calling thread (ppoll(2), then a non-blocking recv)
// instead of parking the goroutine on Go's network poller.
//
// Why: a PHP request calls into Go on its own thread, and the goroutine of
// that call is locked to it. A read parked on the poller is woken by a Go
// thread blocked in epoll, which hands the goroutine back to the PHP thread
// and wakes that one: two thread wake-ups per round trip, where phpredis,
// waiting in poll(2) itself, has one. Measured on loopback
// (bench/php/redis_bench.php, medians of alternating rounds): ephpm took
// 1.16-1.26× phpredis's time per command with poller connections.
//
// A threadConn is used by one goroutine at a time (go-redis's pool hands a
// connection to one caller), except Close, which may come from any
// goroutine: it shuts the socket down, which wakes a waiting reader, and
// closes the descriptor only once no call is using it, so that a number
// reused by another open(2) is never read.
type threadConn struct {
	fd           int
	laddr, raddr net.Addr
	network      string
	// Deadlines as nanoseconds on the monotonic clock since monoBase, 0
	// for none (net.Conn's contract; a step of the wall clock must not
	// move them).
	readDeadline, writeDeadline atomic.Int64
	// slow is set when a raw wait outlasted quickReply, and cleared when
	// a told wait ends within it: a connection to a server milliseconds
	// away waits told (see wait).
	slow atomic.Bool

	// state counts the calls using fd, plus closedBit once Close has
	// run. Close counts itself as a call while it shuts the socket down;
	// the last call to leave after that closes the descriptor: exactly
	// once, and never under a call that still uses its number.
	state atomic.Int64
}

const closedBit = 1 << 62

// dialConn dials like go-redis's default dialer (d, then TLS when
// tlsConfig is set). With onThread the socket is taken over by a
// threadConn, returned as raw, with TLS (if any) over it; without, it stays
// on Go's network poller and raw is nil.
func dialConn(ctx context.Context, d *net.Dialer, tlsConfig *tls.Config, network, addr string, onThread bool) (nc net.Conn, raw *threadConn, err error) {
	nc, err = d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, nil, err
	}
	if onThread {
		if raw, err = newThreadConn(nc, network); err != nil {
			return nil, nil, err
		}
		nc = raw
	}
	if tlsConfig == nil {
		return nc, raw, nil
	}
	cfg := tlsConfig.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		// A timeout alone ("context deadline exceeded") does not say that
		// the server may not serve TLS on that port.
		return nil, nil, fmt.Errorf("TLS handshake with %s: %w (does the server serve TLS on that port?)", addr, err)
	}
	return tc, raw, nil
}

// newThreadConn takes over nc's socket: a close-on-exec duplicate of its
// descriptor (non-blocking, as nc's was), after which nc is closed, which
// removes it from the poller.
func newThreadConn(nc net.Conn, network string) (*threadConn, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		nc.Close()
		return nil, errors.New("redisstore: connection has no descriptor")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		nc.Close()
		return nil, err
	}
	fd, dupErr := -1, error(nil)
	if err := raw.Control(func(s uintptr) { fd, dupErr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		dupErr = err
	}
	c := &threadConn{fd: fd, laddr: nc.LocalAddr(), raddr: nc.RemoteAddr(), network: network}
	nc.Close()
	if dupErr != nil {
		return nil, os.NewSyscallError("dup", dupErr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	return c, nil
}

// acquire marks a call in progress, or fails if the connection is closed.
func (c *threadConn) acquire(op string) error {
	for {
		st := c.state.Load()
		if st&closedBit != 0 {
			return c.opError(op, net.ErrClosed)
		}
		if c.state.CompareAndSwap(st, st+1) {
			return nil
		}
	}
}

func (c *threadConn) release() {
	if c.state.Add(-1) == closedBit {
		unix.Close(c.fd)
	}
}

func (c *threadConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.network, Source: c.laddr, Addr: c.raddr, Err: err}
}

// quickReply is the longest wait a raw one is worth: under it, holding
// the P is like running Go code that long; over it, the two thread
// wake-ups of a told wait cost under 2 % of the wait.
const quickReply = time.Millisecond

// rawWaitLimit bounds the first, raw wait of every read and write; see
// wait. It is the scheduler's own time slice: sysmon preempts a goroutine
// that has run 10 ms, so no raw wait holds a P longer than running Go code
// may.
const rawWaitLimit = 10 * time.Millisecond

// wait blocks the calling thread until the socket is ready for events or
// the deadline passes (a timeout error, as net.Conn reports it).
//
// The first rawWaitLimit is a raw ppoll(2): the runtime is not told that
// the thread is in a system call. Told (as syscall.Syscall does), it keeps
// sysmon polling to see whether to hand this goroutine's P to another
// thread, which makes a round trip measurably slower than phpredis's
// (docs/measurements.md, "Redis: raw and told waits"). A raw call holds the P, so it is
// bounded: a stop-the-world or a goroutine that needs this P waits at most
// rawWaitLimit (less where the preemption signal reaches the thread: it
// interrupts ppoll, which is never restarted; a host thread that blocks
// SIGURG, as Apache's workers block asynchronous signals, makes it wait
// the whole limit). A reply slower than that is waited for with the
// runtime told. And once a raw wait has lasted over quickReply (a server
// milliseconds away), the connection's waits are told ones from the start
// until one ends within quickReply again: a raw wait per round trip would
// keep the P from every other goroutine for most of the time
// (TestSlowRepliesAreWaitedForWithoutHoldingTheP).
//
// The limit is not shorter because a timeout shorter than the kernel's
// tick must be programmed into the timer device, once when the wait
// starts and once when it ends early, and under a hypervisor each is a
// trap that costs a large part of a loopback round trip (docs/measurements.md,
// "Redis: the raw wait's bound").
//
// A deadline set while a wait without one is under way does not end that
// wait (net.Conn's would); go-redis and crypto/tls set deadlines before
// their calls and end waits with Close, which does.
func (c *threadConn) wait(op string, events int16, deadline *atomic.Int64) error {
	raw := !c.slow.Load()
	for {
		var left time.Duration = -1
		if d := deadline.Load(); d != 0 {
			left = untilDeadline(d)
			if left <= 0 {
				return c.opError(op, os.ErrDeadlineExceeded)
			}
		}
		fds := [1]unix.PollFd{{Fd: int32(c.fd), Events: events}}
		var n int
		var err error
		if raw {
			raw = false
			limit := rawWaitLimit
			if left >= 0 && left < limit {
				limit = left
			}
			ts := unix.NsecToTimespec(int64(limit))
			n, err = rawPpoll(&fds, &ts)
			// The kernel leaves the time not slept in ts.
			if waited := limit - time.Duration(ts.Nano()); err == nil && (n == 0 || waited > quickReply) {
				c.slow.Store(true)
			}
		} else {
			var ts *unix.Timespec
			if left >= 0 {
				t := unix.NsecToTimespec(int64(left))
				ts = &t
			}
			start := time.Since(monoBase)
			n, err = unix.Ppoll(fds[:], ts, nil)
			if err == nil && n > 0 && time.Since(monoBase)-start <= quickReply {
				c.slow.Store(false)
			}
		}
		switch {
		case err == unix.EINTR || (err == nil && n == 0):
			continue // interrupted, or timed out: the deadline check decides
		case err != nil:
			return c.opError(op, os.NewSyscallError("ppoll", err))
		}
		return nil // ready, or hung up / failed: the read or write says which
	}
}

// rawPpoll is ppoll(2) on one descriptor for at most ts, as a raw system
// call; the kernel leaves the time not slept in ts.
func rawPpoll(fds *[1]unix.PollFd, ts *unix.Timespec) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 1,
		uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// Read waits for data, then takes what is there (a non-blocking recv,
// raw too: it never waits).
func (c *threadConn) Read(p []byte) (int, error) {
	if err := c.acquire("read"); err != nil {
		return 0, err
	}
	defer c.release()
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if err := c.wait("read", unix.POLLIN, &c.readDeadline); err != nil {
			return 0, err
		}
		r, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(c.fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
			unix.MSG_DONTWAIT, 0, 0)
		switch {
		case e == 0 && r == 0:
			return 0, io.EOF
		case e == 0:
			return int(r), nil
		case e == unix.EAGAIN || e == unix.EINTR:
			continue
		}
		return 0, c.opError("read", os.NewSyscallError("recvfrom", e))
	}
}

// Write writes all of p, waiting for room when the socket buffer is full
// (a non-blocking send, raw: it never waits). MSG_NOSIGNAL: a peer that
// went away is an error, never a SIGPIPE for the host process.
func (c *threadConn) Write(p []byte) (int, error) {
	if err := c.acquire("write"); err != nil {
		return 0, err
	}
	defer c.release()
	written := 0
	for written < len(p) {
		rest := p[written:]
		r, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(c.fd), uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)),
			unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
		switch {
		case e == 0:
			written += int(r)
		case e == unix.EINTR:
		case e == unix.EAGAIN:
			if err := c.wait("write", unix.POLLOUT, &c.writeDeadline); err != nil {
				return written, err
			}
		default:
			return written, c.opError("write", os.NewSyscallError("sendto", e))
		}
	}
	return written, nil
}

// nothingPending reports, without waiting, that the socket is open and has
// no byte to read: a non-blocking MSG_PEEK that finds nothing. A server
// that closed the connection (a restart, an idle timeout) shows as an end
// of stream or an error here, before a command is lost on it.
func (c *threadConn) nothingPending() bool {
	if err := c.acquire("peek"); err != nil {
		return false
	}
	defer c.release()
	var b [1]byte
	_, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(c.fd), uintptr(unsafe.Pointer(&b[0])), 1,
		unix.MSG_DONTWAIT|unix.MSG_PEEK, 0, 0)
	return e == unix.EAGAIN
}

// Close shuts the socket down (waking a reader waiting in ppoll) and
// closes the descriptor once no call uses it.
func (c *threadConn) Close() error {
	for {
		st := c.state.Load()
		if st&closedBit != 0 {
			return c.opError("close", net.ErrClosed)
		}
		// Close counts itself as a user while it shuts the socket down,
		// so the descriptor cannot be closed (and its number reused)
		// under the shutdown.
		if c.state.CompareAndSwap(st, (st+1)|closedBit) {
			unix.Shutdown(c.fd, unix.SHUT_RDWR)
			c.release()
			return nil
		}
	}
}

func (c *threadConn) LocalAddr() net.Addr  { return c.laddr }
func (c *threadConn) RemoteAddr() net.Addr { return c.raddr }

// monoBase is the origin of the stored deadlines.
var monoBase = time.Now()

// monoDeadline turns a deadline into nanoseconds since monoBase: on the
// monotonic clock when t carries a reading of it (time.Now().Add(d) does),
// and never 0, which means none.
func monoDeadline(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(int64(t.Sub(monoBase)), 1)
}

// untilDeadline is the time left before a stored deadline.
func untilDeadline(d int64) time.Duration {
	return time.Duration(d) - time.Since(monoBase)
}

func (c *threadConn) SetDeadline(t time.Time) error {
	c.readDeadline.Store(monoDeadline(t))
	c.writeDeadline.Store(monoDeadline(t))
	return nil
}

func (c *threadConn) SetReadDeadline(t time.Time) error {
	c.readDeadline.Store(monoDeadline(t))
	return nil
}

func (c *threadConn) SetWriteDeadline(t time.Time) error {
	c.writeDeadline.Store(monoDeadline(t))
	return nil
}

// SyscallConn lets go-redis's pool check an idle connection (a
// non-blocking MSG_PEEK) before handing it out.
func (c *threadConn) SyscallConn() (syscall.RawConn, error) { return threadRawConn{c}, nil }

type threadRawConn struct{ c *threadConn }

func (r threadRawConn) Control(f func(fd uintptr)) error {
	if err := r.c.acquire("control"); err != nil {
		return err
	}
	defer r.c.release()
	f(uintptr(r.c.fd))
	return nil
}

func (r threadRawConn) Read(f func(fd uintptr) bool) error {
	return r.rawIO("read", unix.POLLIN, &r.c.readDeadline, f)
}

func (r threadRawConn) Write(f func(fd uintptr) bool) error {
	return r.rawIO("write", unix.POLLOUT, &r.c.writeDeadline, f)
}

// rawIO calls f until it reports done, waiting for readiness in between.
func (r threadRawConn) rawIO(op string, events int16, deadline *atomic.Int64, f func(fd uintptr) bool) error {
	if err := r.c.acquire(op); err != nil {
		return err
	}
	defer r.c.release()
	for !f(uintptr(r.c.fd)) {
		if err := r.c.wait(op, events, deadline); err != nil {
			return err
		}
	}
	return nil
}
