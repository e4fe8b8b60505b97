package redistest

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a server and can cut them all at once,
// or arrange that the next reply is swallowed and the connection cut: the
// "request arrived, reply lost" case.
type Proxy struct {
	Addr   string
	target string
	l      net.Listener

	mu         sync.Mutex
	conns      []net.Conn
	dropReply  bool
	replyDelay time.Duration
}

// NewProxy listens on a free port on 127.0.0.1 and forwards to target.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: l.Addr().String(), target: target, l: l}
	t.Cleanup(func() { l.Close(); p.CutAll() })
	go p.serve()
	return p
}

func (p *Proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { io.Copy(s, c); s.Close() }()
		go p.replies(s, c)
	}
}

// replies copies server replies to the client, unless a reply is to be
// dropped: then it discards it and cuts both sides.
func (p *Proxy) replies(s, c net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			p.mu.Lock()
			drop, delay := p.dropReply, p.replyDelay
			p.dropReply = false
			p.mu.Unlock()
			time.Sleep(delay)
			if drop {
				s.Close()
				c.Close()
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			c.Close()
			return
		}
	}
}

// DropNextReply makes the next reply from the server vanish, with the
// connection it travels on.
func (p *Proxy) DropNextReply() {
	p.mu.Lock()
	p.dropReply = true
	p.mu.Unlock()
}

// DelayReplies holds every reply for d before passing it on, like a
// server d away.
func (p *Proxy) DelayReplies(d time.Duration) {
	p.mu.Lock()
	p.replyDelay = d
	p.mu.Unlock()
}

// CutAll closes every proxied connection.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
