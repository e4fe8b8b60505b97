package shm

// Fencing tokens in shared memory. The latest fence of each lock name lives
// in a file of its own beside the segment, SEGMENT.fences1: not in the
// segment, so that Flush, a lock's release, expiry or eviction leave the
// fences as they are. A segment removed and made again (to resize it) has
// a hash seed of its own, so its names land in other buckets: their old
// fences are forgotten names there, and their next grants still exceed
// them by the wall-clock floor below. The file is a fixed table of fenceBuckets buckets, zero when made,
// so it needs no initialisation: every opener extends it to its size with
// fallocate, which keeps what is there.
//
// A bucket holds fenceWays names, each as its 64-bit key hash (0: empty)
// and its latest fence, and a floor: the largest fence the bucket has
// forgotten. A name's bucket is chosen by the low bits of its hash, which
// also choose its shard, so every name of a bucket is in one shard and the
// bucket is read and written only under that shard's lock: the grant and
// the mint, and the check and the write of a fenced set, are one step.
//
// Each change is a single 8-byte store, ordered so that a process killed
// between any two leaves a state in which a fence can only look larger
// than it is, never smaller: a name's next grant is always above every
// earlier one, and the worst outcome is a fenced write refused.
//   - mint of a remembered name: one store of its fence.
//   - a name taking a way: (when the bucket is full, the way of the lowest
//     fence is its victim: the floor is raised to the victim's fence
//     first), then the way's fence, then the way's hash.
//
// A new fence is also at least the wall clock in microseconds
// (nextFence), so the file may be removed: the sweep removes it together
// with its segment when that is stale (shm/lifecycle.go), and fences made
// after that still exceed every earlier one.
//
// Bounded: 2 MiB of /dev/shm whatever the number of names. A bucket full
// of names forgets its oldest grant's name; a forgotten name's next grant
// continues above the floor, Fence reports the floor for it, and
// SetFenced refuses its writes (whether the fence given is still the latest
// is no longer known). Two names whose 64-bit hashes are equal share one
// fence: each name's grants still increase, and a write may be refused.

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ephpm/ephpm/contract"
)

const (
	fenceWays       = 7
	fenceBucketSize = 128 // fenceWays × (hash, fence), the floor, padding
	fenceBuckets    = 16384
	fenceFileSize   = fenceBuckets * fenceBucketSize
	fenceFloorOff   = fenceWays * 16
)

// fenceTable is one process's mapping of the fence file.
type fenceTable struct {
	mem  []byte
	base unsafe.Pointer
}

func (ft *fenceTable) word(off int) *uint64 { return (*uint64)(unsafe.Add(ft.base, off)) }

// fencesPath is the fence file of the segment file path.
func fencesPath(segment string) string { return segment + ".fences1" }

// openFences maps the fence file of the segment at path, making it if it
// is absent, with the segment's checks: a regular file of uid owner, 0600.
// A process of another uid (root, looking at a pool's segment) never makes
// it: the file would be its own, and the segment's processes would refuse
// it.
func openFences(path string, owner int) (*fenceTable, error) {
	flags := unix.O_RDWR | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if owner == os.Geteuid() {
		flags |= unix.O_CREAT
	}
	fd, err := unix.Open(path, flags, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("shm: %s is a symbolic link: refused (remove it)", path)
		}
		return nil, fmt.Errorf("shm: open %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := checkFileOf(fd, path, owner); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("shm: stat %s: %w", path, err)
	}
	if st.Size > fenceFileSize {
		return nil, incompatible(path, "it is larger than a fence table")
	}
	if st.Size < fenceFileSize {
		// fallocate keeps the bytes already there: openers racing here
		// each extend the same zero table.
		if err := unix.Fallocate(fd, 0, 0, fenceFileSize); err != nil {
			if !errors.Is(err, unix.EOPNOTSUPP) {
				return nil, fmt.Errorf("shm: allocate %d bytes for %s: %w", fenceFileSize, path, err)
			}
			if err := unix.Ftruncate(fd, fenceFileSize); err != nil {
				return nil, fmt.Errorf("shm: size %s: %w", path, err)
			}
		}
	}
	mem, err := unix.Mmap(fd, 0, fenceFileSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: map %s: %w", path, err)
	}
	return &fenceTable{mem: mem, base: unsafe.Pointer(&mem[0])}, nil
}

func (ft *fenceTable) unmap() {
	if ft != nil && ft.mem != nil {
		unix.Munmap(ft.mem)
	}
}

// fenceHash is h as a way stores it: never 0, which marks an empty way.
func fenceHash(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

func bucketOf(h uint64) int { return int(h&(fenceBuckets-1)) * fenceBucketSize }

// current is the latest fence of the name hashing to h, or, for a name not
// in its bucket, the bucket's floor (0 if it never forgot one). Caller
// holds the lock of the name's shard.
func (ft *fenceTable) current(h uint64) (n int64, known bool) {
	b, fh := bucketOf(h), fenceHash(h)
	for w := 0; w < fenceWays; w++ {
		if atomic.LoadUint64(ft.word(b+w*16)) == fh {
			return int64(atomic.LoadUint64(ft.word(b + w*16 + 8))), true
		}
	}
	return int64(atomic.LoadUint64(ft.word(b + fenceFloorOff))), false
}

// nextFence is the fence after prev: prev+1, or the wall clock in
// microseconds if that is larger. The clock floor keeps fences growing
// when the file is made anew (the sweep removes it with its stale segment,
// or a user does), as long as the clock is not set back.
func nextFence(prev uint64) uint64 {
	return max(prev+1, uint64(time.Now().UnixMicro()))
}

// mint records a grant of the name hashing to h and returns its fence.
// Caller holds the lock of the name's shard and has just granted the name.
func (ft *fenceTable) mint(h uint64) int64 {
	b, fh := bucketOf(h), fenceHash(h)
	floor := atomic.LoadUint64(ft.word(b + fenceFloorOff))
	empty, victim, low := -1, -1, uint64(0)
	for w := 0; w < fenceWays; w++ {
		wh := atomic.LoadUint64(ft.word(b + w*16))
		switch {
		case wh == fh:
			n := nextFence(max(atomic.LoadUint64(ft.word(b+w*16+8)), floor))
			atomic.StoreUint64(ft.word(b+w*16+8), n)
			return int64(n)
		case wh == 0:
			if empty < 0 {
				empty = w
			}
		default:
			if f := atomic.LoadUint64(ft.word(b + w*16 + 8)); victim < 0 || f < low {
				victim, low = w, f
			}
		}
	}
	way := empty
	if way < 0 { // the bucket is full: its oldest grant's name is forgotten
		way = victim
		if low > floor {
			atomic.StoreUint64(ft.word(b+fenceFloorOff), low)
			floor = low
		}
	}
	n := nextFence(floor)
	atomic.StoreUint64(ft.word(b+way*16+8), n)
	atomic.StoreUint64(ft.word(b+way*16), fh)
	return int64(n)
}

// fences returns the fence table, mapping it on first use.
func (s *Store) fences() (*fenceTable, error) {
	if ft := s.fenceTab.Load(); ft != nil {
		return ft, nil
	}
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	if ft := s.fenceTab.Load(); ft != nil {
		return ft, nil
	}
	// Close takes fenceMu to unmap the table once it has removed the
	// ticket: a table mapped after that would never be unmapped.
	if s.ticket.Load() == nil {
		return nil, errClosed
	}
	ft, err := openFences(fencesPath(s.g.path), s.owner)
	if err != nil {
		// Every caller asks for the table before it changes anything: a
		// file that cannot be made (ENOSPC, EACCES) or is refused leaves
		// the call undone, not its outcome unknown.
		return nil, fmt.Errorf("%w: %w", contract.ErrNothingDone, err)
	}
	s.fenceTab.Store(ft)
	return ft, nil
}

// Fence returns the latest fence granted for name: 0 if none was.
func (s *Store) Fence(name string) (int64, error) {
	if err := contract.CheckKey(name); err != nil {
		return 0, err
	}
	ft, err := s.fences()
	if err != nil {
		return 0, err
	}
	sh, h, _, tk, err := s.lockKey(name)
	if err != nil {
		return 0, err
	}
	defer s.unlockKey(sh, tk)
	n, _ := ft.current(h)
	return n, nil
}
