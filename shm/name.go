// Naming a segment: the rule for its name, and the one rule that turns a
// name and a uid into the segment's files (PathOf, Files) and reads it
// backwards (Owners).

package shm

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

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
