// Opening a segment file: making and initialising a new one, or mapping one
// that exists once its owner, permissions, layout and hash seed check out;
// and unmapping it.

package shm

import (
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ephpm/ephpm/contract"
)

// ErrIncompatible is wrapped by the error for a file that is not a segment
// this library can read (another magic or layout version): it is never
// read or changed.
var ErrIncompatible = errors.New("shm: incompatible segment file")

// openSegment opens (creating it if it is absent) and maps the segment file
// path. A new segment is sized for limit (0: DefaultMemoryLimit); an
// existing one keeps its size, and a nonzero limit that differs from it is
// an error. The file must be a regular file owned by uid owner with
// no group or other permission bits. With existing, nothing is created:
// a missing file is an error wrapping os.ErrNotExist, one not yet ready
// an error too. anchor (an ident, 0 for none) is the
// process the segment is to live for: see adopt.
//
// The returned segment keeps the file open with a shared flock until it is
// unmapped: a process attached to a segment always holds one, so an
// exclusive flock proves that none is (sweep).
func openSegment(path string, limit int64, anchor uint64, existing bool, owner int, init func(g *segment)) (*segment, error) {
	for {
		g, err := openSegmentOnce(path, limit, anchor, existing, owner, init)
		if err != errSwept {
			return g, err
		}
	}
}

// errSwept: the file was removed (sweep) or replaced after it was opened.
var errSwept = errors.New("shm: segment file removed while opening it")

func openSegmentOnce(path string, limit int64, anchor uint64, existing bool, owner int, init func(g *segment)) (*segment, error) {
	var fd int
	var err error
	if existing {
		fd, err = unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("shm: no segment file %s (nothing was created): %w", path, os.ErrNotExist)
		}
	} else {
		fd, err = unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	}
	created := err == nil && !existing
	if errors.Is(err, unix.EEXIST) {
		fd, err = unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			return nil, errSwept
		}
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("shm: %s is a symbolic link: refused (remove it or choose another name)", path)
		}
		return nil, fmt.Errorf("shm: open %s: %w", path, err)
	}
	kept := false
	defer func() {
		if !kept {
			unix.Close(fd) // drops the flock too
		}
	}()
	if err := checkFileOf(fd, path, owner); err != nil {
		return nil, err
	}
	how := unix.LOCK_SH
	if created {
		how = unix.LOCK_EX
	}
	for {
		if how == unix.LOCK_EX {
			// Never wait for the exclusive flock: every process attached to
			// a ready segment holds a shared one for its lifetime, so a
			// wait could last as long. Without it, take the shared one
			// (granted once an initialiser is done) and look again.
			if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
				if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
					return nil, fmt.Errorf("shm: flock %s: %w", path, err)
				}
				unix.Flock(fd, unix.LOCK_UN)
				time.Sleep(time.Duration(100+mrand.IntN(1900)) * time.Microsecond) // contenders part
				how = unix.LOCK_SH
				continue
			}
		} else if err := flock(fd, how); err != nil {
			return nil, fmt.Errorf("shm: flock %s: %w", path, err)
		}
		if !samePath(fd, path) {
			return nil, errSwept
		}
		g, ready, err := mapIfReady(fd, path)
		if errors.Is(err, ErrIncompatible) && anchor != 0 && !existing && replaceable(fd) {
			// A default segment of another layout that no process uses
			// (an upgrade): made anew, under the exclusive flock
			// replaceable took.
			how, ready, err = unix.LOCK_EX, false, nil
		}
		if err != nil {
			return nil, err
		}
		if !ready && how == unix.LOCK_EX {
			if g, err = initSegment(fd, path, limit, anchor, init); err != nil {
				// Not ready, and no process uses it: no file is left behind.
				unix.Unlink(path)
				return nil, err
			}
		} else if !ready && existing {
			return nil, fmt.Errorf("shm: %s is not a ready segment (its creator has not finished, or died first): nothing was changed", path)
		} else if !ready {
			// Not initialised: its creator died before it was ready, or is
			// still at it (then it holds the exclusive flock, which the
			// kernel drops if it dies). Try for the exclusive flock.
			how = unix.LOCK_EX
			continue
		} else if limit != 0 && limit != g.limit {
			g.unmap()
			return nil, fmt.Errorf("%w: segment %s was created with memory_limit %d, not %d: its size is fixed "+
				"(set memory_limit to %d, or stop the processes using it and remove the file to resize it)",
				contract.ErrInvalidArgument, path, g.limit, limit, g.limit)
		}
		if err := g.adopt(anchor); err != nil {
			g.unmap()
			return nil, err
		}
		if how == unix.LOCK_EX {
			if err := flock(fd, unix.LOCK_SH); err != nil {
				g.unmap()
				return nil, fmt.Errorf("shm: flock %s: %w", path, err)
			}
		}
		g.fd, kept = fd, true
		return g, nil
	}
}

func flock(fd, how int) error {
	for {
		if err := unix.Flock(fd, how); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// checkFile refuses anything but a regular file owned by the effective uid
// without group or other permission bits.
func checkFile(fd int, path string) error { return checkFileOf(fd, path, os.Geteuid()) }

// checkFileOf is checkFile for a file of uid owner.
func checkFileOf(fd int, path string, owner int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("shm: stat %s: %w", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("shm: %s is not a regular file: refused (remove it or choose another name)", path)
	case int(st.Uid) != owner:
		return fmt.Errorf("shm: %s is owned by uid %d, not by uid %d: refused", path, st.Uid, owner)
	case st.Mode&0o077 != 0:
		return fmt.Errorf("shm: %s has mode %#o: group or other may access it: refused (it must be 0600)", path, st.Mode&0o777)
	}
	return nil
}

// mapIfReady maps the file if its header says it is a ready segment of
// this layout; ready is false (and nothing mapped) for a file its creator
// has not finished. A file of another magic or layout version is an error.
func mapIfReady(fd int, path string) (*segment, bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, false, fmt.Errorf("shm: stat %s: %w", path, err)
	}
	if st.Size < headerSize {
		if st.Size >= 8 && readMagic(fd) != magic && readMagic(fd) != 0 {
			return nil, false, incompatible(path, "it is not an ephpm segment (bad magic)")
		}
		return nil, false, nil
	}
	hdr, err := unix.Mmap(fd, 0, headerSize, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, false, fmt.Errorf("shm: map %s: %w", path, err)
	}
	h := &segment{mem: hdr, base: unsafe.Pointer(&hdr[0])}
	m, version := atomic.LoadUint64(h.u64(hMagic)), atomic.LoadUint32(h.u32(hVersion))
	ready := atomic.LoadUint32(h.u32(hReady)) == readyValue
	size := int64(atomic.LoadUint64(h.u64(hSegSize)))
	unix.Munmap(hdr)
	switch {
	case m == 0 && !ready:
		return nil, false, nil
	case m != magic:
		return nil, false, incompatible(path, "it is not an ephpm segment (bad magic)")
	case version != layoutVersion:
		return nil, false, incompatible(path, fmt.Sprintf("it has layout version %d; this library reads version %d", version, layoutVersion))
	case !ready:
		return nil, false, nil
	case size != st.Size:
		return nil, false, incompatible(path, fmt.Sprintf("its header says %d bytes but the file has %d", size, st.Size))
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, false, fmt.Errorf("shm: map %s: %w", path, err)
	}
	g := &segment{path: path, fd: -1, mem: mem, base: unsafe.Pointer(&mem[0])}
	g.readLayout()
	if err := g.validate(); err != nil {
		g.unmap()
		return nil, false, incompatible(path, err.Error())
	}
	if seedCheck(g.seed) != atomic.LoadUint64(g.u64(hSeedCheck)) {
		// Refused, never replaced as an incompatible file is: it is this
		// library's segment, and its processes may still be using it.
		g.unmap()
		return nil, false, errDamagedSeed(path, "does not match its check word")
	}
	return g, true, nil
}

func readMagic(fd int) uint64 {
	var b [8]byte
	if n, _ := unix.Pread(fd, b[:], 0); n != 8 {
		return 0
	}
	return *(*uint64)(unsafe.Pointer(&b))
}

func incompatible(path, why string) error {
	return fmt.Errorf("%w: %s: %s; stop the processes using it and remove the file, or choose another name",
		ErrIncompatible, path, why)
}

func (g *segment) readLayout() {
	g.segSize = int64(*g.u64(hSegSize))
	g.shards = int(*g.u32(hShards))
	g.indexSlots = int(*g.u32(hIndexSlots))
	g.procOff = int64(*g.u64(hProcOff))
	g.waitOff = int64(*g.u64(hWaitOff))
	g.shardOff = int64(*g.u64(hShardOff))
	g.indexOff = int64(*g.u64(hIndexOff))
	g.heapOff = int64(*g.u64(hHeapOff))
	g.heapSize = int64(*g.u64(hHeapSize))
	g.limit = int64(*g.u64(hLimit))
	g.chunk = creditChunk(g.limit, g.shards)
	g.readSeed()
}

// readSeed copies the header's hash seed into g.seed.
func (g *segment) readSeed() {
	for i := range g.seed {
		g.seed[i] = *g.u64(hSeed + int64(i)*8)
	}
}

// seedCheck is the check word of a hash seed (hSeedCheck): a fixed-key
// chain of splitmix64's finaliser over its four words. Each step is a
// bijection of the word it takes in, so a change confined to any one word
// (of any of its bits), or to the check word, is always found; a change to
// several is missed with probability 2^-64.
func seedCheck(k hashSeed) uint64 {
	h := uint64(0x6570686d73656564) // "ephmseed": a fixed key
	for _, w := range k {
		h ^= w
		h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
		h = (h ^ h>>27) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

// errDamagedSeed is the error of a segment whose header's hash seed fails
// its check word, or differs from this process's copy: a process that
// hashed by it would look for every key elsewhere, and find misses, make
// duplicates and grant locks that are held.
func errDamagedSeed(path, how string) error {
	return fmt.Errorf("%w: the key hash seed in %s's header %s (the header was damaged): "+
		"keys would be looked for in the wrong places; stop the processes using it and remove the file",
		ErrCorrupt, path, how)
}

// validate checks that the header's layout is the one planLayout gives for
// its limit, so that no offset read from the file can point outside it.
func (g *segment) validate() error {
	want := planLayout(g.limit)
	if g.limit < MinMemoryLimit || g.layout != want ||
		*g.u32(hHeaderSize) != headerSize || *g.u32(hProcSlots) != procSlots || *g.u32(hWaitSlots) != waitSlots ||
		*g.u32(hSessDataLen) > maxSessPrefix || *g.u32(hSessLockLen) > maxSessPrefix {
		return errors.New("its header describes a layout this library does not make")
	}
	return nil
}

// initSegment sizes, maps and initialises the file, anchored to anchor (an
// ident; 0: none); the caller holds its exclusive flock. Pages are allocated now (fallocate), so that a full
// tmpfs is an error here rather than a SIGBUS on first touch.
func initSegment(fd int, path string, limit int64, anchor uint64, init func(g *segment)) (*segment, error) {
	if limit == 0 {
		limit = DefaultMemoryLimit
	}
	if limit < MinMemoryLimit {
		return nil, fmt.Errorf("%w: memory_limit %d is below the shared-memory store's minimum %d", contract.ErrInvalidArgument, limit, MinMemoryLimit)
	}
	l := planLayout(limit)
	if err := unix.Ftruncate(fd, 0); err != nil { // a half-made segment starts over
		return nil, fmt.Errorf("shm: truncate %s: %w", path, err)
	}
	if err := unix.Fallocate(fd, 0, 0, l.segSize); err != nil {
		if !errors.Is(err, unix.EOPNOTSUPP) {
			return nil, fmt.Errorf("shm: allocate %d bytes for %s (memory_limit %d): %w: the file system "+
				"holding it is full or too small (free space in /dev/shm or make it larger, e.g. docker run "+
				"--shm-size, or lower memory_limit)", l.segSize, path, limit, err)
		}
		if err := unix.Ftruncate(fd, l.segSize); err != nil {
			return nil, fmt.Errorf("shm: size %s: %w", path, err)
		}
	}
	mem, err := unix.Mmap(fd, 0, int(l.segSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: map %s: %w", path, err)
	}
	g := &segment{path: path, fd: -1, mem: mem, base: unsafe.Pointer(&mem[0]), layout: l}
	if err := g.initHeader(anchor, init); err != nil {
		g.unmap()
		return nil, err
	}
	return g, nil
}

// initHeader writes the header of the zeroed mapping g (laid out as
// g.layout), runs init, and marks the segment ready, anchored to anchor.
// A file's creator and a private mapping (private.go) make one alike.
func (g *segment) initHeader(anchor uint64, init func(g *segment)) error {
	l := g.layout
	*g.u32(hVersion) = layoutVersion
	*g.u32(hHeaderSize) = headerSize
	*g.u64(hSegSize) = uint64(l.segSize)
	*g.u32(hShards) = uint32(l.shards)
	*g.u32(hProcSlots) = procSlots
	*g.u32(hWaitSlots) = waitSlots
	*g.u32(hIndexSlots) = uint32(l.indexSlots)
	*g.u64(hProcOff) = uint64(l.procOff)
	*g.u64(hWaitOff) = uint64(l.waitOff)
	*g.u64(hShardOff) = uint64(l.shardOff)
	*g.u64(hIndexOff) = uint64(l.indexOff)
	*g.u64(hHeapOff) = uint64(l.heapOff)
	*g.u64(hHeapSize) = uint64(l.heapSize)
	*g.u64(hLimit) = uint64(l.limit)
	if _, err := rand.Read(unsafe.Slice((*byte)(g.ptr(hInstance)), 16)); err != nil {
		return fmt.Errorf("shm: instance id: %w", err)
	}
	// The hash seed: secret to anyone who cannot read the file, so that
	// no client can choose keys that meet in one shard (hashSeed).
	if _, err := rand.Read(unsafe.Slice((*byte)(g.ptr(hSeed)), len(g.seed)*8)); err != nil {
		return fmt.Errorf("shm: hash seed: %w", err)
	}
	g.readSeed()
	*g.u64(hSeedCheck) = seedCheck(g.seed)
	init(g)
	// The anchor before the magic: a file that is a segment always has
	// its anchor, so that a creator killed now leaves one the sweep knows.
	*g.u64(hAnchor) = anchor
	atomic.StoreUint64(g.u64(hMagic), magic)
	atomic.StoreUint32(g.u32(hReady), readyValue)
	return nil
}

func (g *segment) unmap() {
	if g.mem != nil {
		unix.Munmap(g.mem)
		g.mem, g.base = nil, nil
	}
	if g.fd >= 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
}
