package shm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The process table: procSlots slots of procSlotSize bytes.
//
//	[0:8)   ident  pid<<32 | low 32 bits of the process's start time; 0: free
//	[8:12)  gen    incremented by each process that claims the slot
//
// A process claims a slot by CAS when it attaches and clears it when it
// detaches. Its tag, gen<<14 | (slot+1)<<1, is what it writes into the lock
// words and wait slots it owns; a tag is dead once its slot is free, claimed
// again (another gen), or held by a pid that is gone, a zombie, or a
// different process that reuses the pid (another start time). The start
// time is field 22 of /proc/PID/stat, so a forked child, or a process that
// inherits a dead one's pid, is never taken for it. Processes that share a
// segment must share a pid namespace.
const (
	procSlotSize = 16
	genBits      = 18
	genMask      = 1<<genBits - 1
	slotMask     = 1<<13 - 1
)

func (g *segment) procIdent(slot int) *uint64 { return g.u64(g.procOff + int64(slot)*procSlotSize) }
func (g *segment) procGen(slot int) *uint32   { return g.u32(g.procOff + int64(slot)*procSlotSize + 8) }

func tagOf(slot int, gen uint32) uint32 { return (gen&genMask)<<14 | uint32(slot+1)<<1 }
func tagSlot(tag uint32) int            { return int(tag>>1&slotMask) - 1 }

// selfIdent is this process's ident.
func selfIdent() (uint64, error) {
	pid := os.Getpid()
	start, _, err := procStat(pid)
	if err != nil {
		return 0, fmt.Errorf("shm: reading /proc/%d/stat: %w", pid, err)
	}
	return uint64(pid)<<32 | uint64(uint32(start)), nil
}

// procStat returns a process's start time (clock ticks since boot) and
// state letter from /proc/PID/stat.
func procStat(pid int) (start uint64, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("malformed")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, errors.New("malformed")
	}
	start, err = strconv.ParseUint(string(f[19]), 10, 64)
	return start, f[0][0], err
}

// identAlive reports whether the process that claimed a slot with ident
// still runs. It errs towards alive: only a certain death (ESRCH, no /proc
// entry for a process of this user, a zombie, another start time) counts
// as dead.
func identAlive(ident uint64) bool {
	if ident == 0 {
		return false
	}
	pid := int(ident >> 32)
	killErr := unix.Kill(pid, 0)
	if errors.Is(killErr, unix.ESRCH) {
		return false
	}
	start, state, err := procStat(pid)
	if err != nil {
		// No /proc entry for a process kill says exists and is another
		// user's: /proc is mounted hidepid, which hides it; alive.
		return !errors.Is(err, os.ErrNotExist) || errors.Is(killErr, unix.EPERM)
	}
	return state != 'Z' && state != 'X' && uint32(start) == uint32(ident)
}

// tagAlive reports whether the owner of tag is attached and alive.
func (g *segment) tagAlive(tag uint32) bool {
	slot := tagSlot(tag)
	if slot < 0 || slot >= procSlots {
		return false
	}
	ident := atomic.LoadUint64(g.procIdent(slot))
	if ident == 0 || atomic.LoadUint32(g.procGen(slot))&genMask != tag>>14 {
		return false
	}
	return identAlive(ident)
}

// attach claims a free slot, or one whose process is dead, and returns it
// with this process's tag.
func (g *segment) attach() (slot int, tag uint32, err error) {
	me, err := selfIdent()
	if err != nil {
		return 0, 0, err
	}
	claim := func(i int, old uint64) (int, uint32, bool) {
		if !atomic.CompareAndSwapUint64(g.procIdent(i), old, me) {
			return 0, 0, false
		}
		return i, tagOf(i, atomic.AddUint32(g.procGen(i), 1)), true
	}
	for i := 0; i < procSlots; i++ {
		if atomic.LoadUint64(g.procIdent(i)) == 0 {
			if s, t, ok := claim(i, 0); ok {
				return s, t, nil
			}
		}
	}
	for i := 0; i < procSlots; i++ {
		if old := atomic.LoadUint64(g.procIdent(i)); old != me && !identAlive(old) {
			if s, t, ok := claim(i, old); ok {
				return s, t, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("shm: %s: all %d process slots are taken by live processes", g.path, procSlots)
}

// detach frees slot, which this process claimed with ident me.
func (g *segment) detach(slot int) {
	atomic.StoreUint64(g.procIdent(slot), 0)
}

// attached counts the live processes in the table.
func (g *segment) attached() int {
	n := 0
	for i := 0; i < procSlots; i++ {
		if identAlive(atomic.LoadUint64(g.procIdent(i))) {
			n++
		}
	}
	return n
}
