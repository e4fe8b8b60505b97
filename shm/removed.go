package shm

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
)

var _ backend.Revalidator = (*Store)(nil)

// A segment's file removed under the processes that map it.
//
// systemd-logind with RemoveIPC=yes (its default for users that are not
// system users) removes every file a user owns in /dev/shm when that
// user's last login session ends, while processes of the user still map
// them; an operator's rm does the same. The processes keep their mapping,
// of a file no name leads to any more, and the next process to open the
// name creates a new, empty segment: two stores under one name, each
// granting the same locks, and none of their processes would be told.
//
// So a Store checks that its path still names the file it maps: fstat of
// its open descriptor shows a link count above 0, and lstat of the path
// finds the same device and inode (a file put in its place, or the name
// removed). It checks when the host says a request begins (Revalidate),
// and at the first call once checkInterval has passed since its last
// check: a timer marks the check due, so a call reads no clock and makes
// no system call, only one load of the mark, in lock and in readUnlocked
// (not in enter, which then stays inlined).
//
// Once the file is found gone, every call that reads or writes entries
// (every one that takes a shard's lock: all but Close and the figures
// MemoryConfig, SetMemoryConfig, Attached and Recoveries) fails, for good,
// with an error that is ErrSegmentRemoved and names the cause and the fix.
// Every such call, not only those that grant or check a lock: this process's
// mapping is no longer the store its name names, so a get could return a
// value another process has since deleted or replaced in the new segment, a
// miss could hide one it wrote there, a counter would count apart, and a
// session written here is lost to every other process. Each of those is a
// plausible answer that is false; an outcome that cannot be known is an
// error. The process must be restarted (the fix first: it would happen
// again). Between the removal and a process's next check (the next request,
// or up to checkInterval) its calls are still answered from the old mapping:
// a lock granted there before the removal is still held there, and a process
// of the new segment may be granted it too. Only the fix closes that window.

// checkInterval is how long a Store serves calls after a check of its file
// before it checks again: each check costs two system calls
// (docs/measurements.md), made at most this often and only by a process that
// is making calls.
var checkInterval = 100 * time.Millisecond

// ErrSegmentRemoved is what every error of a Store whose segment file was
// removed, or replaced, while the Store was open is (errors.Is).
var ErrSegmentRemoved = errors.New("shm: the segment file was removed")

// removedError is that error, and contract.ErrNothingDone: its message starts
// with that error's text, as the extension looks for it, and then the file,
// and fits last_error's 512 bytes whole (at most 488 with a 64-character
// name).
type removedError string

func (e removedError) Error() string { return string(e) }
func (e removedError) Is(target error) bool {
	return target == ErrSegmentRemoved || target == contract.ErrNothingDone
}

// check states (Store.check). checkGone is final: it is stored (after
// Store.gone) by the call that finds the file gone or the seed changed,
// and every other change of state is a CAS from the state its maker saw,
// so none undoes it: the timer's NotDue→Due, a call's Due→Running and
// Running→NotDue. A check in flight that passed while another call (a
// Revalidate) found the file gone then leaves the state at checkGone,
// and every call after that refusal is refused too.
const (
	checkNotDue = iota
	checkDue
	checkRunning // a call is checking
	checkGone    // every call fails with Store.gone
)

// armCheck starts the timer that marks the file's check due. Open calls it
// once.
func (s *Store) armCheck() {
	s.checkTimer = time.AfterFunc(checkInterval, func() { s.check.CompareAndSwap(checkNotDue, checkDue) })
}

// checkDue checks the file if the check is due and no other call is at
// it, and returns the error once the file is gone. lock calls it when
// s.check is not checkNotDue.
func (s *Store) checkDue() error {
	if err := s.gone.Load(); err != nil {
		return *err
	}
	if !s.check.CompareAndSwap(checkDue, checkRunning) {
		return nil // another call checks now
	}
	if err := s.checkNow(); err != nil {
		return err // check is checkGone: every call comes here and fails
	}
	if h := checkPassedHook; h != nil {
		h()
	}
	if !s.check.CompareAndSwap(checkRunning, checkNotDue) {
		// checkGone (only refuseAll leaves checkRunning otherwise): found
		// gone meanwhile, by a Revalidate.
		if err := s.gone.Load(); err != nil {
			return *err
		}
	}
	s.checkTimer.Reset(checkInterval)
	return nil
}

// checkPassedHook, if set (tests only), runs in checkDue after its check
// passed and before it records that.
var checkPassedHook func()

// Revalidate checks now that the segment file is still the one this Store
// maps and that the header's hash seed is still the one it hashes by
// (checkSeed), and fails as every call then does if either is not. A host
// calls it as each request begins, so that a request's calls are refused
// from its first one, not up to checkInterval later.
func (s *Store) Revalidate() error {
	if err := s.gone.Load(); err != nil {
		return *err
	}
	tk, err := s.enter()
	if err != nil {
		return err
	}
	defer s.leave(tk)
	return s.checkNow()
}

// checkNow makes the periodic checks: that the header's hash seed is
// still this process's copy (checkSeed), and that the file is still the
// one mapped (checkFile). Caller holds a ticket.
func (s *Store) checkNow() error {
	if err := s.checkSeed(); err != nil {
		return err
	}
	return s.checkFile()
}

// checkSeed compares the header's hash seed with the copy this process
// hashes by (read when it mapped the segment, and checked then against
// the header's check word): a seed changed since, by a stray write, means
// that a process opening now hashes every key elsewhere, or would if the
// check word did not refuse it. Either way this process's answers are no
// longer the segment's: it records ErrCorrupt as the error every call
// returns from then on (as checkFile records a removal) and returns it.
func (s *Store) checkSeed() error {
	for i, w := range s.g.seed {
		if atomic.LoadUint64(s.g.u64(hSeed+int64(i)*8)) != w {
			return s.refuseAll(errDamagedSeed(s.g.path, fmt.Sprintf("changed while pid %d had it mapped", os.Getpid())))
		}
	}
	return nil
}

// checkFile reports whether the segment's path still names the file this
// Store maps; if not, it records the error every call returns from then on
// and returns it. Caller holds a ticket (the descriptor stays open).
func (s *Store) checkFile() error {
	if s.g.private {
		return nil // no file, so no name to lose (OpenPrivate)
	}
	var open, named unix.Stat_t
	if err := unix.Fstat(s.g.fd, &open); err != nil {
		return nil // not known to be gone: a failed fstat of an open descriptor proves nothing
	}
	lerr := unix.Lstat(s.g.path, &named)
	if open.Nlink > 0 && lerr == nil && named.Dev == open.Dev && named.Ino == open.Ino {
		return nil
	}
	if lerr != nil && !errors.Is(lerr, unix.ENOENT) && open.Nlink > 0 {
		return nil // the path cannot be looked at now (EACCES, ...): not known to be gone
	}
	what := "removed"
	if lerr == nil {
		what = "replaced by another file"
	}
	return s.refuseAll(removedError(fmt.Sprintf("%s: shm: %s was %s while pid %d had it mapped "+
		"(systemd-logind's RemoveIPC=yes removes a user's /dev/shm files when their last login session ends); "+
		"its name now leads to another segment, so this process refuses every call rather than split the store. "+
		"Fix: RemoveIPC=no in /etc/systemd/logind.conf (or run PHP as a system user), then restart the processes using it",
		contract.ErrNothingDone, s.g.path, what, os.Getpid())))
}

// refuseAll records err as the error every call returns from now on, unless
// one was recorded first, and returns the one recorded.
func (s *Store) refuseAll(err error) error {
	s.gone.CompareAndSwap(nil, &err)
	s.check.Store(checkGone)
	return *s.gone.Load()
}
