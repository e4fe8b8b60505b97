package shm

import (
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ephpm/ephpm/kv"
)

// The segment is one file mapped MAP_SHARED by every process that names it.
// Every structure in it is addressed by offset from the mapping's start, so
// each process may map it at a different address. Its regions, in order:
//
//	header       headerSize bytes: identity, layout, segment-wide settings
//	proc table   procSlots × procSlotSize
//	wait table   waitSlots × waitSlotSize
//	shards       S × shardHeaderSize: lock word, counters, free lists
//	indexes      S × indexSlots × 8 bytes
//	heaps        S × heapSize bytes
const (
	magic = 0x4d48534d50485045 // "EPHPMSHM" little-endian
	// layoutVersion 2: session data has a budget of its own (per-shard
	// tallies, the session rule and budget in the header).
	// 3: each shard has a word of non-empty free lists (sFreeMap), which a
	// version-2 library would not keep.
	// 4: a key of up to 16 bytes hashes by hashKey's own mix, not
	// xxhash, so it has another shard and index tag than in version 3.
	// 5: a shard keeps a spare block (sSpare, state stateSpare), which a
	// version-4 library would read as corruption.
	// 6: gets read with no lock, against each shard's count of its lock's
	// releases (sSeq), which a version-5 library would not keep.
	// 7: an entry's word at [28:32) is its holder (entry.go), which a
	// version-6 library leaves as whatever the block held before.
	// 8: the key hash is seeded by the segment's own random words (hSeed),
	// so every key has another shard, index tag and fence bucket than in
	// version 7; beside them, their check word (hSeedCheck). (The check
	// word came after version 8 was first committed but before any
	// release, in the header's unused space: no released library reads
	// version 8.)
	layoutVersion = 8
	headerSize    = 4096
	readyValue    = 0x52454459 // "REDY"

	// Header fields.
	hMagic       = 0
	hVersion     = 8
	hHeaderSize  = 12
	hSegSize     = 16
	hShards      = 24
	hProcSlots   = 28
	hWaitSlots   = 32
	hIndexSlots  = 36
	hProcOff     = 40
	hWaitOff     = 48
	hShardOff    = 56
	hIndexOff    = 64
	hHeapOff     = 72
	hHeapSize    = 80
	hLimit       = 88
	hPolicy      = 96  // atomic: kv.Policy
	hCompression = 100 // atomic: 0 none, 1 lz4
	hMinSize     = 104 // atomic: compression minimum size
	hReady       = 108 // readyValue once the segment is initialised; written last
	hInstance    = 112 // 16 random bytes
	hRecoveries  = 128 // atomic: shards recovered from a dead owner
	hLRUClock    = 136 // atomic: coarse clock (ms) stamped on reads
	hBudgetLock  = 140 // uint32: the session budget's lock word (session.go)
	hSessLimit   = 144 // atomic int64: the session budget in force, bytes; 0: none
	hSessSetting = 152 // atomic int64: MemoryConfig.SessionLimit as configured
	hSeed        = 160 // [4]uint64: the key hash's seed (hashSeed), random, fixed when the segment is made
	hSeedCheck   = 192 // uint64: seedCheck of hSeed, written with it
	hUsed        = 256 // [maxShards]int64, atomic: bytes charged per shard
	// hAnchor (atomic) is the ident of the process the segment lives for
	// (lifecycle.go), 0 for none. Like magic and version it stays at this
	// offset in every layout version, so that a library can remove a stale
	// segment of a layout it cannot otherwise read.
	hAnchor = 1024
	// The session rule (session.go), fixed when the segment is made: the
	// lengths of the data and lock prefixes, then their bytes.
	hSessDataLen = 1536
	hSessLockLen = 1540
	hSessData    = 1544
	hSessLock    = hSessData + maxSessPrefix
	// After the session rule, hRates (rates.go): the rate ring, in space
	// a segment of this layout leaves zero until a process ticks it.

	// maxSessPrefix is the longest session prefix a segment records.
	maxSessPrefix = 256

	maxShards = 32
	procSlots = 4096
	waitSlots = 1024
	// DefaultMemoryLimit is the limit of a segment created without one.
	DefaultMemoryLimit = 64 << 20
	// MinMemoryLimit is the smallest limit a segment is created with.
	MinMemoryLimit = 256 << 10
)

// layout is where each region of a segment lies.
type layout struct {
	segSize    int64
	shards     int
	indexSlots int // per shard, a power of two
	procOff    int64
	waitOff    int64
	shardOff   int64
	indexOff   int64
	heapOff    int64
	heapSize   int64 // per shard
	limit      int64
	// chunk is the credit a shard reserves beyond a write's need (credit.go),
	// worked out once: a write's accounting uses it, and a division costs
	// more than the rest of that accounting.
	chunk int64
}

// planLayout sizes a segment for a memory limit: the heaps together hold
// a quarter more than the limit (headroom, so that a shard fuller than
// average still takes writes that fit the store), split over a power of two
// of shards of at least 1 MiB each (at most maxShards); each index has one
// slot per 64 heap bytes, rounded up to a power of two.
func planLayout(limit int64) layout {
	l := layout{limit: limit}
	heaps := limit + limit/4
	l.shards = maxShards
	for l.shards > 1 && heaps/int64(l.shards) < 1<<20 {
		l.shards /= 2
	}
	l.heapSize = (heaps/int64(l.shards) + 4095) &^ 4095
	l.indexSlots = 64
	for int64(l.indexSlots)*64 < l.heapSize {
		l.indexSlots *= 2
	}
	off := int64(headerSize)
	l.procOff = off
	off += procSlots * procSlotSize
	l.waitOff = off
	off += waitSlots * waitSlotSize
	l.shardOff = off
	off += int64(l.shards) * shardHeaderSize
	off = (off + 4095) &^ 4095
	l.indexOff = off
	off += int64(l.shards) * int64(l.indexSlots) * 8
	off = (off + 4095) &^ 4095
	l.heapOff = off
	off += int64(l.shards) * l.heapSize
	l.segSize = off
	l.chunk = creditChunk(limit, l.shards)
	return l
}

// segment is one process's mapping of a segment file.
type segment struct {
	path string
	fd   int    // the open file, with this process's shared flock; -1: none
	mem  []byte // the mapping: never handed to the garbage collector's heap
	base unsafe.Pointer
	layout
	// sess is the segment's session rule (from its header), which every
	// process applies alike: it decides where a key hashes.
	sess kv.SessionRule
	// seed is the segment's key hash seed (from its header), copied here
	// so that a hash reads it from this process's memory.
	seed hashSeed
}

func (g *segment) ptr(off int64) unsafe.Pointer { return unsafe.Add(g.base, off) }

// bytes and str are views of n bytes of the mapping at off.
func (g *segment) bytes(off int64, n int) []byte {
	return unsafe.Slice((*byte)(g.ptr(off)), n)
}
func (g *segment) str(off int64, n int) string { return unsafe.String((*byte)(g.ptr(off)), n) }
func (g *segment) u32(off int64) *uint32       { return (*uint32)(g.ptr(off)) }
func (g *segment) u64(off int64) *uint64       { return (*uint64)(g.ptr(off)) }
func (g *segment) i64(off int64) *int64        { return (*int64)(g.ptr(off)) }

var namePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Path returns the file of the segment called name, in dir ("" means
// /dev/shm): ephpm-NAME.UID, UID being the effective uid.
func Path(dir, name string) string { return PathOf(dir, name, os.Geteuid()) }

// PathOf is Path for the segment of user uid. It is the one rule that
// names a segment's file: the library, the ephpm command, tests and
// benchmarks all name it by PathOf (and list owners by Owners, a
// segment's files by Files), never by a format of their own.
func PathOf(dir, name string, uid int) string {
	if dir == "" {
		dir = "/dev/shm"
	}
	return fmt.Sprintf("%s/%s%d", dir, filePrefix(name), uid)
}

// filePrefix is what the file names of segment name's owners begin with.
func filePrefix(name string) string { return "ephpm-" + name + "." }

// Files are the files of the segment called name of user uid in dir (""
// means /dev/shm), whether or not they exist: the segment, then its
// fence file (fence.go). For a tool or test that removes a segment it
// knows no process uses.
func Files(dir, name string, uid int) []string {
	p := PathOf(dir, name, uid)
	return []string{p, fencesPath(p)}
}

// Owners returns the uids that have a segment file called name in dir (""
// means /dev/shm), in increasing order: PathOf read backwards. Another
// file that begins alike (a fence file, a segment whose name continues
// with a dot) is no owner's.
func Owners(dir, name string) ([]int, error) {
	if dir == "" {
		dir = "/dev/shm"
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var uids []int
	for _, e := range entries { // ReadDir sorts by name; uids are sorted below
		rest, ok := strings.CutPrefix(e.Name(), filePrefix(name))
		if uid, err := strconv.Atoi(rest); ok && err == nil && uid >= 0 && strconv.Itoa(uid) == rest {
			uids = append(uids, uid)
		}
	}
	slices.Sort(uids)
	return uids, nil
}

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
				kv.ErrInvalidArgument, path, g.limit, limit, g.limit)
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
		return nil, fmt.Errorf("%w: memory_limit %d is below the shared-memory store's minimum %d", kv.ErrInvalidArgument, limit, MinMemoryLimit)
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
		g.unmap()
		return nil, fmt.Errorf("shm: instance id: %w", err)
	}
	// The hash seed: secret to anyone who cannot read the file, so that
	// no client can choose keys that meet in one shard (hashSeed).
	if _, err := rand.Read(unsafe.Slice((*byte)(g.ptr(hSeed)), len(g.seed)*8)); err != nil {
		g.unmap()
		return nil, fmt.Errorf("shm: hash seed: %w", err)
	}
	g.readSeed()
	*g.u64(hSeedCheck) = seedCheck(g.seed)
	init(g)
	// The anchor before the magic: a file that is a segment always has
	// its anchor, so that a creator killed now leaves one the sweep knows.
	*g.u64(hAnchor) = anchor
	atomic.StoreUint64(g.u64(hMagic), magic)
	atomic.StoreUint32(g.u32(hReady), readyValue)
	return g, nil
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

// instanceID formats the segment's 16 random bytes as a UUID.
func (g *segment) instanceID() string {
	b := unsafe.Slice((*byte)(g.ptr(hInstance)), 16)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
