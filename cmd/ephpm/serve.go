package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/ephpm/ephpm/cmd/ephpm/internal/server"
)

// passwordEnv is where serve finds the password when no flag gives it
// (a flag's value is visible to every user in ps).
const passwordEnv = "EPHPM_REQUIREPASS"

const serveUsage = `usage: ephpm [target] serve [--listen ADDR | --unix PATH] [--requirepass-file FILE | --no-auth] [options]

Serves the segment over Redis's protocol. Whoever connects reads and writes
everything the segment holds: every key, the pool's sessions and its locks.
So it is served only as its file is: on TCP (which every local user can
reach) a password is required, from --requirepass-file FILE or
$` + passwordEnv + `, unless --no-auth says every local user may; on --unix
PATH the socket is mode 0600 and owned by the segment's user, who (with root)
alone may connect, and no password is needed.

Before AUTH a client's commands are held to Redis's limits (10 arguments of
16 KiB at most); --maxclients bounds the connections (10000, as Redis), and
--timeout, if set, closes idle ones.

`

// runServe serves the segment over RESP until SIGINT or SIGTERM (or
// e.stop). Whoever reaches the endpoint reads and writes everything the
// segment holds, sessions and locks included, so it is never served to
// anyone its file's permissions would not let in without a word: on TCP
// (any local uid can connect to a loopback port) it wants a password
// unless --no-auth says to serve every local user; on --unix the socket
// is made mode 0600 and given to the segment's owner, who alone (with
// root) may open the segment itself, and no password is needed. It binds
// to loopback unless --allow-remote says otherwise, and a non-loopback
// address needs a password, --no-auth or not.
func runServe(e *env, args []string) int {
	var listen, unixPath, pass, passFile, cpuProfile string
	var remote, noAuth bool
	var maxClients int
	var idle time.Duration
	var fs *flag.FlagSet
	if pos, ok := parseFlags(e, "serve", args, func(f *flag.FlagSet) {
		fs = f
		f.Usage = func() {
			fmt.Fprint(e.stderr, serveUsage)
			f.PrintDefaults()
		}
		f.StringVar(&listen, "listen", "127.0.0.1:6380", "the TCP address to listen on (host:port)")
		f.StringVar(&unixPath, "unix", "", "listen on a Unix socket at this path instead of TCP: mode 0600, owned by the segment's user, "+
			"so only that user (and root) can connect, as only they can open the segment; no password is needed")
		f.StringVar(&pass, "requirepass", "", "the password AUTH must give (also $"+passwordEnv+", or --requirepass-file)")
		f.StringVar(&passFile, "requirepass-file", "", "a file whose first line is the password")
		f.BoolVar(&noAuth, "no-auth", false, "serve TCP with no password: every local user (any uid that can connect to "+
			"the port) then reads and writes the whole store, the pool's sessions and locks included")
		f.BoolVar(&remote, "allow-remote", false, "allow an address other than loopback (a password is required then)")
		f.IntVar(&maxClients, "maxclients", server.DefaultMaxClients, "the most connections served at once (Redis's "+
			"maxclients); one more is answered -ERR max number of clients reached and closed")
		f.DurationVar(&idle, "timeout", 0, "close a connection idle this long, e.g. 300s (Redis's timeout); 0: never, as Redis's default")
		f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) to this file until the server stops")
	}); !ok || len(pos) != 0 {
		return 2
	}
	listenSet := false
	fs.Visit(func(f *flag.Flag) { listenSet = listenSet || f.Name == "listen" })
	if e.opts.redis != "" {
		return fail(e, errors.New("serve serves a segment: a Redis server speaks RESP itself"))
	}
	if maxClients < 1 || idle < 0 {
		return fail(e, errors.New("--maxclients must be at least 1 and --timeout not negative"))
	}
	switch {
	case pass != "" && passFile != "":
		return fail(e, errors.New("--requirepass and --requirepass-file: give one"))
	case passFile != "":
		b, err := os.ReadFile(passFile)
		if err != nil {
			return fail(e, err)
		}
		pass, _, _ = strings.Cut(string(b), "\n")
		if pass == "" {
			return fail(e, fmt.Errorf("%s holds no password", passFile))
		}
	case pass == "":
		pass = os.Getenv(passwordEnv)
	}
	if noAuth && pass != "" {
		return fail(e, errors.New("--no-auth and a password: give one"))
	}
	if unixPath != "" {
		if listenSet || remote {
			return fail(e, errors.New("--unix and --listen (or --allow-remote): give one place to listen"))
		}
	} else {
		loopback, err := isLoopback(listen)
		if err != nil {
			return fail(e, err)
		}
		if !loopback && !remote {
			return fail(e, fmt.Errorf("%s is not a loopback address: anyone who reaches it reads and writes the store; "+
				"pass --allow-remote (with a password) if that is meant", listen))
		}
		if !loopback && pass == "" {
			return fail(e, fmt.Errorf("%s is not a loopback address: a password is required (--requirepass-file, $%s)", listen, passwordEnv))
		}
		if pass == "" && !noAuth {
			return fail(e, fmt.Errorf("a password is required: every local user can connect to %s, and would read and write "+
				"the whole store, the pool's sessions and locks included. Give one (--requirepass-file FILE or $%s), "+
				"or serve on a Unix socket only the segment's user can open (--unix PATH), or pass --no-auth if every "+
				"local user may", listen, passwordEnv))
		}
	}
	t, err := open(e)
	if err != nil {
		return fail(e, err)
	}
	defer t.b.Close()
	var l net.Listener
	where := ""
	if unixPath != "" {
		if l, err = listenUnix(unixPath, t.uid); err != nil {
			return fail(e, err)
		}
		where = fmt.Sprintf("unix socket %s (mode 0600, uid %d)", unixPath, t.uid)
	} else {
		if l, err = net.Listen("tcp", listen); err != nil {
			return fail(e, err)
		}
		where = l.Addr().String()
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			l.Close()
			return fail(e, err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			l.Close()
			return fail(e, err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	s := server.New(server.Config{Store: t.seg, Password: pass, Describe: t.describe,
		MaxClients: maxClients, IdleTimeout: idle,
		Logf: func(format string, args ...any) { fmt.Fprintf(e.stderr, "ephpm: "+format+"\n", args...) }})
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(stop)
	go func() {
		select {
		case <-stop:
		case <-e.stop:
		}
		s.Close()
	}()
	auth := "AUTH required"
	switch {
	case pass != "":
	case unixPath != "":
		auth = "no password: the socket's mode admits the segment's user"
	default:
		auth = "no password (--no-auth): every local user may connect"
	}
	fmt.Fprintf(e.stderr, "ephpm: serving %s on %s (%s)\n", t.describe, where, auth)
	if err := s.Serve(l); !errors.Is(err, server.ErrClosed) {
		return fail(e, err)
	}
	return 0
}

// listenUnix listens on a Unix socket at path that only uid (and root)
// may connect to: made mode 0600 from the start (the umask, for the
// instant between bind and chmod), then given to uid. A socket file left
// by a server that is gone (nothing accepts on it) is replaced; anything
// else at path is refused.
func listenUnix(path string, uid int) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("--unix %s: a file that is not a socket is there: refused", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("--unix %s: a server listens there already", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	old := syscall.Umask(0o177)
	l, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	err = os.Chmod(path, 0o600)
	if err == nil && uid != os.Geteuid() {
		err = os.Lchown(path, uid, -1)
	}
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("--unix %s: %v", path, err)
	}
	return l, nil
}

// isLoopback reports whether every address host:port may bind is a
// loopback one: an IP of 127.0.0.0/8 or ::1, or a name that resolves
// only to such.
func isLoopback(hostport string) (bool, error) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false, fmt.Errorf("--listen %q: %v", hostport, err)
	}
	if host == "" {
		return false, nil // every interface
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback(), nil
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return false, fmt.Errorf("--listen %q: %v", hostport, err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return false, nil
		}
	}
	return len(ips) > 0, nil
}
