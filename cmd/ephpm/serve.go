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

	"github.com/ephpm/ephpm/cmd/ephpm/internal/server"
)

// passwordEnv is where serve finds the password when no flag gives it
// (a flag's value is visible to every user in ps).
const passwordEnv = "EPHPM_REQUIREPASS"

// runServe serves the segment over RESP until SIGINT or SIGTERM. It binds
// to loopback unless --allow-remote says otherwise, and a non-loopback
// address needs a password too.
func runServe(e *env, args []string) int {
	var listen, pass, passFile, cpuProfile string
	var remote bool
	if pos, ok := parseFlags(e, "serve", args, func(fs *flag.FlagSet) {
		fs.StringVar(&listen, "listen", "127.0.0.1:6380", "the address to listen on (host:port)")
		fs.StringVar(&pass, "requirepass", "", "the password AUTH must give (also $"+passwordEnv+", or --requirepass-file)")
		fs.StringVar(&passFile, "requirepass-file", "", "a file whose first line is the password")
		fs.BoolVar(&remote, "allow-remote", false, "allow an address other than loopback (a password is required then)")
		fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) to this file until the server stops")
	}); !ok || len(pos) != 0 {
		return 2
	}
	if e.opts.redis != "" {
		return fail(e, errors.New("serve serves a segment: a Redis server speaks RESP itself"))
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
	t, err := open(e)
	if err != nil {
		return fail(e, err)
	}
	defer t.b.Close()
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return fail(e, err)
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return fail(e, err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return fail(e, err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	s := server.New(server.Config{Store: t.seg, Password: pass, Describe: t.describe,
		Logf: func(format string, args ...any) { fmt.Fprintf(e.stderr, "ephpm: "+format+"\n", args...) }})
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		s.Close()
	}()
	auth := "no password"
	if pass != "" {
		auth = "AUTH required"
	}
	fmt.Fprintf(e.stderr, "ephpm: serving %s on %s (%s)\n", t.describe, l.Addr(), auth)
	if err := s.Serve(l); !errors.Is(err, server.ErrClosed) {
		return fail(e, err)
	}
	return 0
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
