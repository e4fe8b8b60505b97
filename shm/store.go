// Package shm is ephpm's shared-memory store: the key-value store of package
// memstore with the same contracts, kept in a named segment that every process
// mapping it shares (php-fpm workers, CLI scripts), and that survives any
// of them being killed at any instruction.
//
// The segment is a file /dev/shm/ephpm-NAME.UID mapped MAP_SHARED. Nothing
// in it is a Go pointer: every structure is addressed by offset and every
// shared word is read and written with sync/atomic. It is split into
// shards, each with its own lock word, hash index and heap; an operation on
// one key runs entirely under its shard's lock, so a decision and the change
// it leads to are one step no other process can interleave with. A process
// that dies holding a lock is detected by the waiters (lock.go), and its
// shard is recovered (recover.go) before anyone uses it: every entry then
// reads as its old or its new value, and nothing acknowledged is lost.
//
// See "The shared-memory store" in docs/design.md.
package shm

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ephpm/ephpm/contract"
)

// Options configure Open.
type Options struct {
	// Dir holds the segment file; "" means /dev/shm.
	Dir string
	// Memory: Limit sizes a segment this call creates (0: DefaultMemoryLimit)
	// and must match an existing one's if nonzero; Policy, Compression and
	// CompressionMinSize are segment-wide and applied on every Open.
	Memory contract.MemoryConfig
	// PinnedPrefixes lists key prefixes whose entries this process writes
	// pinned: never evicted.
	PinnedPrefixes []string
	// SessionDataPrefix, SessionLockPrefix and SessionLimitName are the
	// session rule (contract.NewSessionRule), as for the in-process store:
	// session data lives within Memory.SessionLimit, and
	// while its lock is there it is never evicted; session locks never
	// are. The prefixes are the segment's, fixed when this call makes it:
	// "" takes the segment's, others must be the same.
	SessionDataPrefix, SessionLockPrefix, SessionLimitName string
	// Anchor is the pid of the process the segment lives for (a php-fpm
	// master for its pool's segment), 0 for none: see lifecycle.go.
	Anchor int
	// Existing attaches to a segment that exists and is ready, as a tool
	// that looks at a server's segment does (the ephpm command): Open
	// creates no file (a missing one is an error wrapping os.ErrNotExist),
	// sweeps nothing, records no anchor, replaces no file (one of another
	// layout is refused, never made anew) and changes none of the
	// segment's settings (the segment keeps the policy, compression and
	// session budget its servers set), and never creates the fence file
	// for another uid's segment (a call that needs it then fails, having
	// done nothing). So Anchor and Memory, which say what to make and
	// set, must be zero with it: either is refused with
	// contract.ErrInvalidArgument.
	Existing bool
	// Owner, with Existing, is the uid whose segment NAME is
	// (/dev/shm/ephpm-NAME.OWNER): the file must be that uid's, 0600, as
	// every segment is. nil means the effective uid; UID(0) is root's
	// segment (a uid of 0 cannot stand for "mine", or nobody could name
	// root's). A process of another uid opens it only if the file's
	// permissions let it (root does). Without Existing it may only name
	// the effective uid: a segment this process makes is its own.
	Owner *int
}

// UID is an Options.Owner naming uid.
func UID(uid int) *int { return &uid }

// Store is one process's attachment to a segment. It is safe for
// concurrent use; Close detaches it.
type Store struct {
	g      *segment
	owner  int // the uid the segment file belongs to
	slot   int
	tag    uint32
	pinned []string
	shards []shard

	// ticket is what a call holds while it uses the mapping; Close takes
	// it away (nil: closed) and waits until no call holds it (enter).
	ticket atomic.Pointer[ticket]

	// fenceTab is the fence file's mapping, made on first use (fence.go).
	fenceMu  sync.Mutex
	fenceTab atomic.Pointer[fenceTable]
	// deadOwnerWait is the longest this process waited for a shard whose
	// owner had died: from the start of its wait until the shard was
	// recovered (ns).
	deadOwnerWait atomic.Int64

	// The check that the segment's file is still the one mapped
	// (removed.go): check is checkNotDue, checkDue (checkTimer marked it),
	// checkRunning or checkGone (final); gone is the error every call returns once the file
	// was found removed, or the header's hash seed changed (checkSeed).
	check      atomic.Uint32
	gone       atomic.Pointer[error]
	checkTimer *time.Timer
	// rateTimer is the next tick of the rate ring (rates.go).
	rateTimer atomic.Pointer[time.Timer]
}

var (
	errClosed = errors.New("shm: store closed")
	// ErrCorrupt: a shard's structures were found inconsistent, by
	// recovery or by a call's checks (checked.go); the shard serves no
	// more calls (its outcome would be unknown).
	ErrCorrupt = errors.New("shm: segment shard is corrupt")
)

// Open attaches to the segment called name (1-64 of [A-Za-z0-9._-]),
// creating it if it does not exist.
func Open(name string, opts Options) (*Store, error) {
	if !namePattern.MatchString(name) {
		return nil, fmt.Errorf("%w: shared-memory segment name %q is not 1-64 of [A-Za-z0-9._-]", contract.ErrInvalidArgument, name)
	}
	cfg := opts.Memory
	if opts.Existing && (opts.Anchor != 0 || cfg != (contract.MemoryConfig{})) {
		return nil, fmt.Errorf("%w: Existing attaches to segment %s as it is: an anchor (%d) or a memory setting (%+v) "+
			"would make or change it", contract.ErrInvalidArgument, name, opts.Anchor, cfg)
	}
	if err := contract.CheckMemoryConfig(cfg); err != nil {
		return nil, err
	}
	var anchor uint64
	if opts.Anchor != 0 {
		if anchor = identOf(opts.Anchor); anchor == 0 {
			return nil, fmt.Errorf("shm: the anchor process %d of segment %s does not run", opts.Anchor, name)
		}
	}
	if err := checkSessionPrefixes(opts.SessionDataPrefix, opts.SessionLockPrefix); err != nil {
		return nil, err
	}
	owner := os.Geteuid()
	if opts.Owner != nil {
		if o := *opts.Owner; o < 0 || !opts.Existing && o != owner {
			return nil, fmt.Errorf("%w: owner uid %d: a segment is named by the uid it belongs to (>= 0), and one this "+
				"process makes belongs to its effective uid %d", contract.ErrInvalidArgument, o, owner)
		}
		owner = *opts.Owner
	}
	if !opts.Existing {
		sweep(opts.Dir)
	}
	g, err := openSegment(PathOf(opts.Dir, name, owner), cfg.Limit, anchor, opts.Existing, owner, func(g *segment) {
		initShards(g)
		g.writeSessionRule(opts.SessionDataPrefix, opts.SessionLockPrefix)
	})
	if err != nil {
		return nil, err
	}
	if err := g.readSessionRule(opts.SessionDataPrefix, opts.SessionLockPrefix, opts.SessionLimitName); err != nil {
		g.unmap()
		return nil, err
	}
	var budget int64
	if !opts.Existing {
		if budget, err = g.sess.Budget(contract.MemoryConfig{Limit: g.limit, SessionLimit: cfg.SessionLimit}); err != nil {
			g.unmap()
			return nil, err
		}
	}
	s, err := newStore(g, owner, opts.PinnedPrefixes)
	if err != nil {
		g.unmap()
		return nil, err
	}
	if !opts.Existing {
		s.applyConfig(cfg, budget)
	}
	s.armCheck()
	s.armRates()
	return s, nil
}

// newStore is this process's handle on segment g, attached to its process
// table: a Store of owner's, keeping pinned's prefixes from eviction.
func newStore(g *segment, owner int, pinned []string) (*Store, error) {
	s := &Store{g: g, owner: owner, pinned: append([]string(nil), pinned...)}
	s.ticket.Store(newTicket())
	for i := 0; i < g.shards; i++ {
		s.shards = append(s.shards, g.shard(i))
	}
	var err error
	if s.slot, s.tag, err = g.attach(); err != nil {
		return nil, err
	}
	return s, nil
}

func initShards(g *segment) {
	for i := 0; i < g.shards; i++ {
		sh := g.shard(i)
		sh.initHeap()
	}
}

// Path is the segment's file.
func (s *Store) Path() string { return s.g.path }

// Name is the backend's kind, as stats report it.
func (s *Store) Name() string { return "shm" }

// Close detaches this process from the segment once calls in progress have
// returned, and unmaps it. Calls after Close fail. The segment and its
// entries stay.
func (s *Store) Close() error {
	tk := s.ticket.Swap(nil)
	if tk == nil {
		return nil
	}
	s.checkTimer.Stop()
	if t := s.rateTimer.Load(); t != nil {
		t.Stop()
	}
	done := tk.done
	tk = nil
	// The ticket is unreachable once no call holds it: every call keeps it
	// alive to its end (enter, leave), and no call can take it any more.
	// The collector finds that; its cleanup closes done.
	for pause := 50 * time.Microsecond; ; pause = min(2*pause, 100*time.Millisecond) {
		runtime.GC()
		select {
		case <-done:
			s.g.detach(s.slot)
			s.g.unmap()
			s.fenceMu.Lock()
			s.fenceTab.Load().unmap()
			s.fenceMu.Unlock()
			return nil
		case <-time.After(pause):
		}
	}
}
