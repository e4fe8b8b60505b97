// Package server is ephpm's RESP endpoint: Redis's protocol onto a store,
// for the commands the store has. Every command is one call of the store's
// own methods, the ones PHP's calls reach (backend.Backend, its walk
// included, and the conditional set of backend.CondSetter), so a
// command is exactly as atomic as the same call from PHP: a SETNX sent by
// redis-cli and an ephpm_kv_setnx() in a php-fpm worker race for one lock
// in the store's one step, and one wins.
//
// One goroutine serves each connection. It reads every command the
// connection has sent, answers each into a buffer, and writes the buffer
// when it has nothing more to read (resp.Reader.BeforeRead): a pipeline
// is answered in one write.
package server

import (
	"crypto/subtle"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/cmd/ephpm/internal/resp"
)

// Store is what the endpoint serves: a backend with the walk (SCAN) and
// the conditional set (SET ... GET, SET ... IFEQ).
type Store interface {
	backend.Backend
	backend.CondSetter
}

// Config configures a Server.
type Config struct {
	Store Store
	// Password, when not empty, is what AUTH (or HELLO's AUTH) must
	// give before any other command but HELLO and QUIT is served, as
	// Redis's requirepass: the user is "default".
	Password string
	// Describe names the store in INFO (a segment's file).
	Describe string
	// MaxClients is the most connections served at once, as Redis's
	// maxclients (0: DefaultMaxClients); one more is answered Redis's
	// "-ERR max number of clients reached" and closed.
	MaxClients int
	// IdleTimeout, if not 0, closes a connection that has neither sent
	// a command nor taken its replies for that long, as Redis's timeout
	// (whose default, 0, is never).
	IdleTimeout time.Duration
	// Logf, if set, receives what the server has to say (a walk that
	// skipped a damaged shard, a connection's protocol error).
	Logf func(format string, args ...any)
}

// DefaultMaxClients is Redis's default maxclients.
const DefaultMaxClients = 10000

// errMaxClients is Redis's answer to a connection beyond maxclients.
const errMaxClients = "-ERR max number of clients reached\r\n"

// Server serves Config.Store over RESP.
type Server struct {
	cfg      Config
	started  time.Time
	ids      atomic.Int64
	clients  atomic.Int64
	commands atomic.Uint64
	conns    atomic.Uint64
	rejected atomic.Uint64

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	open      map[net.Conn]struct{}
	closed    bool
	wg        sync.WaitGroup
}

// New makes a server of cfg.
func New(cfg Config) *Server {
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	return &Server{cfg: cfg, started: time.Now(), listeners: map[net.Listener]struct{}{}, open: map[net.Conn]struct{}{}}
}

// ErrClosed is what Serve returns once Close was called.
var ErrClosed = errors.New("server closed")

// Serve accepts connections on l and serves each on a goroutine of its
// own until Close; it returns ErrClosed then, or l's error.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	var pause time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				time.Sleep(pause)
				continue
			}
			return err
		}
		pause = 0
		if s.clients.Add(1) > int64(s.cfg.MaxClients) {
			// As Redis: told why, then closed. The reply fits the new
			// socket's empty send buffer; the deadline bounds the rest.
			s.clients.Add(-1)
			s.rejected.Add(1)
			nc.SetWriteDeadline(time.Now().Add(time.Second))
			nc.Write([]byte(errMaxClients))
			nc.Close()
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			s.clients.Add(-1)
			nc.Close()
			return ErrClosed
		}
		s.open[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer s.clients.Add(-1)
			s.serveConn(nc)
			s.mu.Lock()
			delete(s.open, nc)
			s.mu.Unlock()
		}()
	}
}

// Close stops every Serve and closes every connection, and waits for
// their goroutines to end.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	for c := range s.open {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// conn is one client's connection.
type conn struct {
	s      *Server
	nc     net.Conn
	r      *resp.Reader
	w      *resp.Writer
	id     int64
	authed bool
	name   string
	quit   bool
	// buf is where GET and MGET copy values (grown to the largest
	// value up to getBufMax; a larger one gets a buffer of its own).
	buf []byte
}

const getBufMax = 1 << 20

func (s *Server) serveConn(nc net.Conn) {
	defer nc.Close()
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c := &conn{s: s, nc: nc, r: resp.NewReader(nc), w: resp.NewWriter(nc), id: s.ids.Add(1),
		buf: make([]byte, 4096)}
	c.setAuthed(s.cfg.Password == "")
	c.r.BeforeRead = c.w.Flush
	if idle := s.cfg.IdleTimeout; idle > 0 {
		c.r.BeforeRead = func() error {
			if err := c.w.Flush(); err != nil {
				return err
			}
			return nc.SetDeadline(time.Now().Add(idle))
		}
		nc.SetDeadline(time.Now().Add(idle))
	}
	s.conns.Add(1)
	for !c.quit {
		args, err := c.r.Next()
		if err != nil {
			var pe resp.ProtocolError
			if errors.As(err, &pe) {
				c.w.Error("ERR " + pe.Error())
				s.logf("client %d (%s): %v", c.id, nc.RemoteAddr(), err)
			}
			break
		}
		s.commands.Add(1)
		c.dispatch(args)
	}
	c.w.Flush()
}

// setAuthed records whether the client may use the store, and sets its
// reader's limits to match: Redis's small ones until it may (resp.Unauthenticated).
func (c *conn) setAuthed(ok bool) {
	c.authed = ok
	c.r.Limits = resp.Unauthenticated
	if ok {
		c.r.Limits = resp.Authenticated
	}
}

// checkPassword reports whether given is the password, in time that does
// not depend on where they differ.
func (s *Server) checkPassword(user, given []byte) bool {
	ok := subtle.ConstantTimeCompare(given, []byte(s.cfg.Password)) == 1
	return ok && (user == nil || string(user) == "default")
}

// lower writes b in lower case into dst (which it may outgrow) and
// returns it: command names and options are matched without regard to
// case, and switching on string(lower(...)) allocates nothing.
func lower(dst, b []byte) []byte {
	dst = dst[:0]
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// cleanArg is an argument as an error text quotes it: at most 128 bytes,
// with no line breaks.
func cleanArg(b []byte) string {
	if len(b) > 128 {
		b = b[:128]
	}
	return oneLine(string(b))
}

// oneLine is s with its line breaks made spaces, as an error reply needs.
func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }
