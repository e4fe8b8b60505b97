// The engine on a private anonymous mapping: one process's own store, made
// by the segment's code, with nothing in /dev/shm.

package shm

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ephpm/ephpm/contract"
)

// OpenPrivate opens the engine on a mapping of this process's own
// (MAP_PRIVATE|MAP_ANONYMOUS): the in-process store's role, played by the
// segment's code. The bridge does not serve it: it is what the question
// of one engine or two is measured with (docs/design.md), and a variant
// the engine's tests and fuzzing run on. What the file-based parts do,
// and what each becomes:
//
//   - The file (Dir, Existing, Owner, Anchor; the sweep, the flock, the
//     check of an existing file's layout and seed): there is none; nothing
//     is named, shared or left behind. Those options are refused.
//   - The removed-file check (removed.go): no name to lose, so checkFile
//     passes at once; the check of the header's hash seed stays.
//   - The process table and the dead-holder rule (proc.go; lock.go,
//     wait.go, expiry.go and scan.go ask it): this process claims one
//     slot, and every lock word, wait slot and holder word carries its tag,
//     alive as long as the mapping is. No waiter ever takes a shard over
//     and recovery never runs: the mapping dies with its only process.
//   - Fences (fence.go) live in a file beside a segment so that they
//     outlive it; here in a private mapping made now, which lives as long
//     as the store, as the in-process store's live as long as the process.
//     A fence is still at least the wall clock in microseconds (nextFence),
//     so the next process's grants exceed this one's.
//   - Futexes: the shared futex operations work on a private mapping
//     (the kernel keys them by address space); only this process waits.
//   - Fork: both mappings are MADV_DONTFORK, so a forked child gets no
//     copy. The provider's fork guard (bridge/fork_guard.c) refuses every
//     call in a forked child before it enters Go, since the Go runtime does
//     not survive fork: a child could never use the store (its copy of the
//     in-process store's Go heap is dead weight too). Without the copy a
//     fork is cheaper, and the parent's later writes take no copy-on-write
//     faults. MAP_SHARED|MAP_ANONYMOUS would be wrong: a child would share
//     the parent's live store under the parent's tag and process slot, so
//     the table could not tell the two apart (a lock one takes reads as
//     the other's, and the parent's death frees nothing the child holds),
//     and the pages would be shmem, kept while either process lives.
//   - Size: fixed here, as a segment's is when it is made. Memory.Limit 0
//     means DefaultMemoryLimit (the in-process store: no limit), and
//     SetMemoryConfig cannot change it. The whole mapping is reserved now
//     (an error here under strict overcommit, rather than a fault later);
//     a page becomes resident when it is first written.
func OpenPrivate(opts Options) (*Store, error) {
	cfg := opts.Memory
	if opts.Dir != "" || opts.Existing || opts.Owner != nil || opts.Anchor != 0 {
		return nil, fmt.Errorf("%w: a private mapping has no file: Dir, Existing, Owner and Anchor do not apply to it",
			contract.ErrInvalidArgument)
	}
	if err := contract.CheckMemoryConfig(cfg); err != nil {
		return nil, err
	}
	if err := checkSessionPrefixes(opts.SessionDataPrefix, opts.SessionLockPrefix); err != nil {
		return nil, err
	}
	limit := cfg.Limit
	if limit == 0 {
		limit = DefaultMemoryLimit
	}
	if limit < MinMemoryLimit {
		return nil, fmt.Errorf("%w: memory_limit %d is below the shared-memory store's minimum %d", contract.ErrInvalidArgument, limit, MinMemoryLimit)
	}
	l := planLayout(limit)
	mem, err := privateMap(int(l.segSize))
	if err != nil {
		return nil, fmt.Errorf("shm: private mapping of %d bytes (memory_limit %d): %w", l.segSize, limit, err)
	}
	g := &segment{path: fmt.Sprintf("the private mapping of pid %d", os.Getpid()), fd: -1, mem: mem,
		base: unsafe.Pointer(&mem[0]), layout: l, private: true}
	if err := g.initHeader(0, func(g *segment) {
		initShards(g)
		g.writeSessionRule(opts.SessionDataPrefix, opts.SessionLockPrefix)
	}); err != nil {
		g.unmap()
		return nil, err
	}
	if err := g.readSessionRule(opts.SessionDataPrefix, opts.SessionLockPrefix, opts.SessionLimitName); err != nil {
		g.unmap()
		return nil, err
	}
	budget, err := g.sess.Budget(contract.MemoryConfig{Limit: g.limit, SessionLimit: cfg.SessionLimit})
	if err != nil {
		g.unmap()
		return nil, err
	}
	fm, err := privateMap(fenceFileSize)
	if err != nil {
		g.unmap()
		return nil, fmt.Errorf("shm: private fence table: %w", err)
	}
	fences := &fenceTable{mem: fm, base: unsafe.Pointer(&fm[0])}
	s, err := newStore(g, os.Geteuid(), opts.PinnedPrefixes)
	if err != nil {
		fences.unmap()
		g.unmap()
		return nil, err
	}
	s.fenceTab.Store(fences)
	s.applyConfig(cfg, budget)
	s.armCheck()
	s.armRates()
	return s, nil
}

// privateMap maps n zero bytes of this process's own, which a forked child
// does not inherit.
func privateMap(n int) ([]byte, error) {
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, err
	}
	if err := unix.Madvise(mem, unix.MADV_DONTFORK); err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	return mem, nil
}
