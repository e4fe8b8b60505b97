package shm

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// What creates, keeps and removes a segment file.
//
// Any process that opens a name creates its file if it is absent. A
// process attached to a segment holds a shared flock on the file until it
// closes it or dies (the kernel drops a dead process's flocks), so an
// exclusive flock taken without waiting proves that no process is attached
// or in the middle of opening it.
//
// A segment may be anchored: the header's hAnchor word holds the ident (pid
// and start time, as in the process table) of the process it lives for, a
// php-fpm master for the segment of one of its pools. The first process
// that opens it with an anchor records it; a later one with another anchor
// takes the segment over only if the recorded one is dead, and is refused
// while it lives, so two servers never share a segment by accident. A
// segment opened without an anchor (a name set in ephpm.kv_backend) keeps
// whatever anchor it has.
//
// Open sweeps the directory first: a file of this user whose anchor is
// dead and that no process holds (an exclusive flock without waiting) is
// unlinked while that flock is held. A sweeper killed at any point leaves
// the file either whole or gone; an opener that opened the file before the
// unlink sees, once it has its flock, that the name no longer leads to that
// file, and opens the name again (samePath). Unanchored segments are never
// removed by ephpm: they are named by configuration, one file per name.

// identOf is the ident of process pid, or 0 if it cannot be read.
func identOf(pid int) uint64 {
	start, _, err := procStat(pid)
	if err != nil {
		return 0
	}
	return uint64(pid)<<32 | uint64(uint32(start))
}

// adopt records anchor (an ident; 0: none, and adopt does nothing) as the
// segment's, unless a live other process is recorded.
func (g *segment) adopt(anchor uint64) error {
	if anchor == 0 {
		return nil
	}
	w := g.u64(hAnchor)
	for {
		old := atomic.LoadUint64(w)
		if old == anchor {
			return nil
		}
		if old != 0 && identAlive(old) {
			return fmt.Errorf("shm: segment %s serves the processes of pid %d, which runs, not those of pid %d: "+
				"two servers would share it; name a segment for each (ephpm.kv_backend=shm://NAME)",
				g.path, old>>32, anchor>>32)
		}
		if atomic.CompareAndSwapUint64(w, old, anchor) {
			return nil
		}
	}
}

// fileAnchor reads the anchor of the open segment file fd without mapping
// it: 0 if it is not an ephpm segment or has none.
func fileAnchor(fd int) uint64 {
	if readMagic(fd) != magic {
		return 0
	}
	var b [8]byte
	if n, _ := unix.Pread(fd, b[:], hAnchor); n != 8 {
		return 0
	}
	return *(*uint64)(unsafe.Pointer(&b))
}

// replaceable reports whether the open segment file fd is an anchored one
// that no other process holds, taking its exclusive flock if so.
func replaceable(fd int) bool {
	return fileAnchor(fd) != 0 && unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil
}

// samePath reports whether path still names the file open as fd.
func samePath(fd int, path string) bool {
	var a, b unix.Stat_t
	if unix.Fstat(fd, &a) != nil || unix.Lstat(path, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// sweep removes the stale segment files of this user in dir ("" means
// /dev/shm), with their fence files: held by none, and anchored to a dead
// process or never made into a segment (no magic: a creator killed early). It reports the
// paths it removed.
func sweep(dir string) []string {
	if dir == "" {
		dir = "/dev/shm"
	}
	suffix := "." + strconv.Itoa(os.Geteuid())
	names, _ := filepath.Glob(filepath.Join(dir, "ephpm-*"+suffix))
	var removed []string
	for _, path := range names {
		if !strings.HasSuffix(path, suffix) {
			continue
		}
		if removeIfStale(path) {
			removed = append(removed, path)
		}
	}
	return removed
}

func removeIfStale(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if checkFile(fd, path) != nil || unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false
	}
	// A file that never became a segment (its creator died before writing
	// the magic) goes too: nobody holds it, and an opener that has it open
	// finds, once flocked, that the name no longer leads to it.
	halfMade := readMagic(fd) == 0
	anchor := fileAnchor(fd)
	if !halfMade && (anchor == 0 || identAlive(anchor)) || !samePath(fd, path) {
		return false
	}
	// Its fence file first, while the segment's name still stands: until
	// both are gone nobody can make a new segment of that name, and so
	// nobody can map the old fence file for it. Fences made later start
	// from the clock (nextFence).
	_ = unix.Unlink(fencesPath(path))
	return unix.Unlink(path) == nil
}
