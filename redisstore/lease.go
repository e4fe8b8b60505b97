// Leases: a lock granted with contract.Step.Bound lasts no longer than a
// short lease past the last sign of life of the process that holds it.

package redisstore

import (
	"bytes"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Bound grant (contract.Step.Bound: a session's lock granted to the
// session handler, a lock taken with ephpm_kv_lock(bound: true)) is bound to its process on Redis as on a shared-memory
// segment, by a lease instead of a pid, since the holder may be on another
// machine: the lock's PX is min(lease, its TTL), and while the process
// holds it a goroutine of the store (renewer) sets it again every
// leasePeriod to min(lease, the TTL left), so that a live holder keeps its
// lock for its whole TTL and a dead one (killed, crashed, stopped, cut off
// from the server) loses it at most one lease after its last renewal. The
// lock's value stays its token, so releases, guards and other processes
// see it as they see any lock.
//
// The TTL left is reckoned on the server's clock, in the renewal script,
// from a deadline no later than the grant's: the time the grant was sent,
// mapped to the clock of the server that owns the lock by the offset of
// the latest renewal there (the server's TIME less the local time its
// answer came back: no more than the true offset; a server not yet asked
// is asked its time first), plus the TTL. So no renewal sets an expiry
// past the lock's TTL, however late the renewal runs or travels. A renewal
// is one script per Cluster slot for every lock the process holds there
// (renewScript): PEXPIRE only while the lock holds the holder's token, so
// a renewal that comes late, after the lock lapsed (the key is gone) or
// went to another holder (another token: tokens are random per grant),
// changes nothing, and the holder stops renewing it. A holder whose lock
// lapsed learns so from the server at its next guarded call, as when a TTL
// passes: a token guard is refused, and a fence guard is refused once
// anyone else was granted the lock.
//
// A grant whose TTL is no longer than the lease is not renewed: PX is its
// TTL. A release (DelIfEq, LockRelease, a Step with Release) ends the
// renewal; a refresh with the holder's token (ExpireIfEq, LockRefresh, or a
// Step that expires the lock itself under its token) sets the PX to
// min(lease, the new TTL) and the deadline to the new TTL from the refresh.

// DefaultLease is the lease of a Bound lock when the URL names none
// (lock_lease): a dead holder's lock lapses at most this long after its
// last renewal, so at most this long after its death.
const DefaultLease = 2 * time.Second

// MinLease is the shortest lease a URL may set: a renewal is a round trip
// and a goroutine's turn on a CPU, and a lease shorter than a loaded
// host's pause would take live holders' locks away.
const MinLease = 100 * time.Millisecond

// BoundLease is the lease of a lock granted with contract.Step.Bound: its
// PTTL is at most this while its holder renews it; 0: none (lock_lease=0).
func (s *Store) BoundLease() time.Duration { return s.lease }

// leasePeriod is how often a lease is renewed: four times a lease, so a
// live holder loses its lock only when three renewals in a row are lost or
// late (a process that gets no CPU, or no answer, for three quarters of a
// lease).
func leasePeriod(lease time.Duration) time.Duration { return lease / 4 }

// renewScript renews the locks KEYS, each while it holds its token
// ARGV[2i], for min(lease ARGV[1] ms, until its deadline ARGV[2i+1], µs of
// the server's TIME; '0': none). The answer is the server's TIME in µs,
// then a space and, for each lock, '1' renewed or '0' not (it holds
// something else or nothing, or its deadline is less than a millisecond
// away: its renewal ends). With ARGV[1] 'time' it answers the time alone
// (KEYS only route it to their server). PEXPIRE takes no memory, so a full
// server renews too.
var renewScript = newScript(`
local t = redis.call('time')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
if ARGV[1] == 'time' then return string.format('%.0f', now) .. ' ' end
local lease = tonumber(ARGV[1])
local r = {}
for i, k in ipairs(KEYS) do
  r[i] = '0'
  if redis.call('get', k) == ARGV[2 * i] then
    local px = lease
    local d = tonumber(ARGV[2 * i + 1])
    if d ~= 0 then px = math.min(px, math.floor((d - now) / 1000)) end
    if px >= 1 then
      redis.call('pexpire', k, px)
      r[i] = '1'
    end
  end
end
return string.format('%.0f', now) .. ' ' .. table.concat(r)`)

// leased is one lock this process holds with a lease.
type leased struct {
	rk    string // the lock's Redis key
	token string
	// sent is when the grant (or the latest refresh) was sent, on the
	// monotonic clock since monoBase, and ttl its TTL (0: none).
	sent, ttl time.Duration
}

// renewer renews the leases of the locks this process holds; its
// goroutine runs while it has some.
type renewer struct {
	s *Store
	// refresh orders a renewal and a refresh of one lock: a renewal sent
	// with the old deadline must not reach the server after a refresh
	// that shortened the TTL.
	refresh sync.Mutex

	mu   sync.Mutex
	held map[leaseKey]*leased
	// offsets are each server's TIME less the local time (monoBase's
	// clock), in µs, as the latest renewal there found it, never more than
	// the true offset, by server (node).
	offsets map[string]int64
	running bool
	closed  bool
	stop    chan struct{}
}

type leaseKey struct{ rk, token string }

func newRenewer(s *Store) *renewer {
	return &renewer{s: s, held: map[leaseKey]*leased{}, offsets: map[string]int64{}, stop: make(chan struct{})}
}

// boundTTL is the PX of a Bound grant or refresh with ttl (0: none), and
// whether the lock needs renewing (its TTL is longer than the lease).
func (s *Store) boundTTL(ttl time.Duration) (time.Duration, bool) {
	if s.lease <= 0 || (ttl > 0 && ttl <= s.lease) {
		return ttl, false
	}
	return s.lease, true
}

// monoNow is the local time as leases count it: since monoBase.
func monoNow() time.Duration { return time.Since(monoBase) }

// hold starts renewing the lock rk granted to token by a request sent at
// sent (monoNow) with ttl (0: none).
func (r *renewer) hold(rk string, token []byte, sent, ttl time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.held[leaseKey{rk, string(token)}] = &leased{rk: rk, token: string(token), sent: sent, ttl: ttl}
	if !r.running {
		r.running = true
		go r.loop()
	}
}

// drop ends the renewal of lock rk held by token, if it has one.
func (r *renewer) drop(rk string, token []byte) {
	r.mu.Lock()
	delete(r.held, leaseKey{rk, string(token)})
	r.mu.Unlock()
}

// holds reports whether lock rk's lease is renewed for token.
func (r *renewer) holds(rk string, token []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.held[leaseKey{rk, string(token)}]
	return ok
}

// moved sets the TTL of lock rk held by token, if it is renewed, to ttl
// from sent (monoNow).
func (r *renewer) moved(rk string, token []byte, sent, ttl time.Duration) {
	r.mu.Lock()
	if l, ok := r.held[leaseKey{rk, string(token)}]; ok {
		l.sent, l.ttl = sent, ttl
	}
	r.mu.Unlock()
}

// refreshing begins a refresh of lock rk by token to ttl (0: none). If
// this process renews rk for token, px is the PX the refresh sets
// (min(lease, ttl): boundTTL), and renewals wait until done is called, so
// that one sent with the old deadline cannot reach the server after a
// refresh that shortened the TTL; done(true), for a refresh that was
// made, moves the renewal's deadline to ttl from the refresh. Else px is
// ttl and done does nothing. The caller calls done once, whatever the
// refresh's outcome.
func (s *Store) refreshing(rk string, token []byte, ttl time.Duration) (px time.Duration, done func(made bool)) {
	if !s.renew.holds(rk, token) {
		return ttl, notRenewed
	}
	px, _ = s.boundTTL(ttl)
	s.renew.refresh.Lock()
	sent := monoNow()
	return px, func(made bool) {
		if made {
			s.renew.moved(rk, token, sent, ttl)
		}
		s.renew.refresh.Unlock()
	}
}

// notRenewed is refreshing's done for a lock this process does not renew.
func notRenewed(bool) {}

// count is how many locks are renewed.
func (r *renewer) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.held)
}

// close stops the goroutine, without waiting for a renewal under way
// (which then fails on the closed client): the locks lapse within a
// lease.
func (r *renewer) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	r.held = map[leaseKey]*leased{}
	close(r.stop)
}

// loop renews every leasePeriod until no lock is left or the store closes.
func (r *renewer) loop() {
	t := time.NewTicker(leasePeriod(r.s.lease))
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		if !r.renew() {
			return
		}
	}
}

// renew renews every lock held once, and reports whether any is left to
// renew; when none is, the goroutine has ended (running false) before it
// returns. A lock whose TTL has passed, or that no longer holds its token,
// is dropped. A renewal that fails (a server down, a lost reply) keeps the
// lock for the next one: if it ran, the lock has its lease; if not, the
// lock lapses one lease after the last that ran.
func (r *renewer) renew() bool {
	r.refresh.Lock()
	defer r.refresh.Unlock()
	now := monoNow()
	groups := map[int][]renewal{}
	r.mu.Lock()
	for k, l := range r.held {
		if l.ttl != 0 && now >= l.sent+l.ttl {
			delete(r.held, k) // its TTL has passed here, so on the server too
			continue
		}
		slot := 0
		if r.s.mode == Cluster {
			slot = keySlot(l.rk)
		}
		groups[slot] = append(groups[slot], renewal{l, l.sent + l.ttl, l.ttl != 0})
	}
	if len(r.held) == 0 {
		r.running = false
		r.mu.Unlock()
		return false
	}
	r.mu.Unlock()
	for _, all := range groups {
		for len(all) > 0 {
			g := all[:min(len(all), renewBatch)]
			all = all[len(g):]
			r.renewGroup(g)
		}
	}
	return true
}

// renewal is one lock's renewal: until end (monoNow's clock), if timed.
type renewal struct {
	l     *leased
	end   time.Duration
	timed bool
}

// renewBatch is the most locks one renewal script renews: a script blocks
// the server while it runs.
const renewBatch = 256

// node is the server that owns Redis key rk, as offsets are kept: its
// address in a Cluster, "" elsewhere (one master at a time). A failover
// or a slot's move gives a server a new clock: the first renewal there
// reckons with the old server's offset, off by the two clocks' skew, and
// learns the new one from its answer.
func (r *renewer) node(rk string) string {
	if cc, ok := r.s.c.(*redis.ClusterClient); ok {
		if c, err := cc.MasterForKey(ctx, rk); err == nil {
			return c.Options().Addr
		}
	}
	return ""
}

// renewGroup renews the locks of g, all in one slot, in one script, and
// takes the offset of their server's clock from its answer; a server
// whose offset is not known yet is asked its time first (a deadline is
// reckoned with it).
func (r *renewer) renewGroup(g []renewal) {
	node := r.node(g[0].l.rk)
	r.mu.Lock()
	offset, known := r.offsets[node]
	r.mu.Unlock()
	if !known {
		if offset, known = r.clock(node, g[0].l.rk); !known {
			return
		}
	}
	keys := make([]string, len(g))
	argv := make([]any, 1, 1+2*len(g))
	argv[0] = ms(r.s.lease)
	for i, n := range g {
		var d int64 // the deadline on the server's clock, µs; 0: none
		if n.timed {
			d = max(n.end.Microseconds()+offset, 1)
		}
		keys[i] = n.l.rk
		argv = append(argv, n.l.token, d)
	}
	done, ok := r.run(node, keys, argv)
	if !ok || len(done) != len(g) {
		return
	}
	r.mu.Lock()
	for i, n := range g {
		k := leaseKey{n.l.rk, n.l.token}
		if done[i] != '1' && r.held[k] == n.l {
			delete(r.held, k) // lost: the holder learns it at its next guarded call
		}
	}
	r.mu.Unlock()
}

// clock asks node (through key rk, which it owns) its time and keeps the
// offset.
func (r *renewer) clock(node, rk string) (int64, bool) {
	if _, ok := r.run(node, []string{rk}, []any{"time"}); !ok {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	offset, ok := r.offsets[node]
	return offset, ok
}

// run runs renewScript on node's keys with argv, keeps the offset its
// answer gives, and returns the answer's part after the time.
func (r *renewer) run(node string, keys []string, argv []any) ([]byte, bool) {
	rep, err := r.s.runInto(nil, renewScript, keys, argv...)
	back := monoNow()
	if err != nil || rep.kind != '$' {
		return nil, false
	}
	now, done, ok := bytes.Cut(rep.b, []byte{' '})
	server, err := strconv.ParseInt(string(now), 10, 64)
	if !ok || err != nil {
		return nil, false
	}
	r.mu.Lock()
	// The server read its clock before the answer came back: the offset
	// found is no more than the true one.
	r.offsets[node] = server - back.Microseconds()
	r.mu.Unlock()
	return done, true
}
