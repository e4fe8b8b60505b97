package bridge

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"github.com/ephpm/ephpm/internal/segname"
)

// autoSegment says what the backend "auto" is in a process of the server
// API sapi: under one that serves requests from several processes, the
// shared-memory segment of its pool (name), anchored to the process that
// forked it (anchor, a pid; 0: none), so that every worker of the pool
// shares locks and sessions; elsewhere name is "" and the in-process store
// serves. why says which it is, for stats.
//
//	fpm-fcgi        fpm-POOL, from the worker's title "php-fpm: pool POOL"
//	                (fpm-PPID if the title is not there); anchor: the master
//	                (none if the parent's title is not a master's)
//	cli-server      with PHP_CLI_SERVER_WORKERS > 1: cli-server-ADDR, from
//	                the -S address (':' and other characters a segment name
//	                cannot hold become '_'); anchor: the php -S master (which
//	                serves requests too)
//	apache2handler  apache; anchor: the Apache parent process (none if its
//	                command line is not this process's)
//	cgi-fcgi        cgi; no anchor: php-cgi may be started per request by
//	                a web server, or as a pool by PHP_FCGI_CHILDREN
func autoSegment(sapi string) (name string, anchor int, why string) {
	switch sapi {
	case "fpm-fcgi":
		cmdline, _ := os.ReadFile("/proc/self/cmdline")
		title := strings.TrimRight(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})), " ")
		master := os.Getppid()
		if !fpmMaster(master) {
			// Orphaned (the master died and pid 1 or a subreaper is the
			// parent): share the pool's segment without anchoring it to
			// a process that is not its master.
			master = 0
		}
		if pool, ok := strings.CutPrefix(title, "php-fpm: pool "); ok && pool != "" {
			return segname.FPMPool(pool), master, "php-fpm pool " + pool
		}
		return segmentName("fpm-" + strconv.Itoa(os.Getppid())), master, "php-fpm worker"
	case "cli-server":
		if n, _ := strconv.Atoi(os.Getenv("PHP_CLI_SERVER_WORKERS")); n > 1 {
			// The master serves requests too: it is its own anchor, and its
			// workers' (whose parent serves the same -S address; the whole
			// command lines may differ, as under valgrind).
			cmdline, _ := os.ReadFile("/proc/self/cmdline")
			addr, master := serverAddress(cmdline), os.Getppid()
			// A wrapper (timeout, strace) whose command line holds the same
			// -S address is not the master: the master runs this program.
			if parent, _ := os.ReadFile("/proc/" + strconv.Itoa(master) + "/cmdline"); addr == "" ||
				serverAddress(parent) != addr || !sameProgram(master) {
				master = os.Getpid()
			}
			// HOST:PORT is HOST_PORT: no host name or address holds a '_'.
			return segmentName("cli-server-" + strings.ReplaceAll(addr, ":", "_")), master, "php -S with PHP_CLI_SERVER_WORKERS"
		}
		return "", 0, "php -S in one process"
	case "apache2handler":
		// Apache's children are forks of its parent: the same command
		// line. Anything else (an orphan's pid 1) anchors nothing.
		parent := os.Getppid()
		self, _ := os.ReadFile("/proc/self/cmdline")
		if pc, err := os.ReadFile("/proc/" + strconv.Itoa(parent) + "/cmdline"); err != nil || !bytes.Equal(pc, self) {
			parent = 0
		}
		return "apache", parent, "Apache mod_php"
	case "cgi-fcgi":
		return "cgi", 0, "php-cgi"
	}
	if sapi == "" {
		return "", 0, "the host names no server API"
	}
	return "", 0, sapi + " runs in one process"
}

// serverAddress is the address after php's -S in a command line (its
// arguments separated by NULs), or "" if there is none.
func serverAddress(cmdline []byte) string {
	args := strings.Split(string(cmdline), "\x00")
	for i, a := range args {
		if a == "-S" && i+1 < len(args) {
			return args[i+1]
		}
		if addr, ok := strings.CutPrefix(a, "-S"); ok && addr != "" {
			return addr
		}
	}
	return ""
}

// segmentName makes s a segment name: segname.Name, the rule the ephpm
// command finds a pool's segment by too.
func segmentName(s string) string { return segname.Name(s) }

// fpmMaster reports whether pid is a php-fpm master (its title says so):
// a worker's parent is, unless the worker was orphaned.
func fpmMaster(pid int) bool {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && bytes.HasPrefix(cmdline, []byte("php-fpm: master process"))
}

// sameProgram reports whether process pid (of this user) runs this
// process's executable.
func sameProgram(pid int) bool {
	self, err1 := os.Stat("/proc/self/exe")
	other, err2 := os.Stat("/proc/" + strconv.Itoa(pid) + "/exe")
	return err1 == nil && err2 == nil && os.SameFile(self, other)
}
