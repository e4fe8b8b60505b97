// Package redistest starts throwaway redis-server processes on 127.0.0.1
// for tests, and stops them by PID when the test ends.
package redistest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startLimit bounds a server's start, and the Cluster's: a hang catch, not
// a speed bound (a loaded host under the race detector takes seconds).
const startLimit = 2 * time.Minute

// Server is a running redis-server.
type Server struct {
	Addr   string
	Port   int
	Dir    string
	argv   []string
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has exited (and been waited for)
}

// Start runs redis-server on a free port with extra config lines ("key
// value"), waits until it answers, and stops it when t ends. It skips t if
// redis-server is not installed (scripts/setup.sh test installs it).
func Start(t testing.TB, extra ...string) *Server {
	return launch(t, serverHead, extra)
}

// StartSentinel runs a Sentinel (redis-server --sentinel) that monitors
// master under the name "mymaster".
func StartSentinel(t testing.TB, master *Server) *Server {
	return launch(t, sentinelHead, []string{
		fmt.Sprintf("sentinel monitor mymaster 127.0.0.1 %d 1", master.Port),
		"sentinel down-after-milliseconds mymaster 5000",
	}, "--sentinel")
}

// ServerBinary is the server the tests run: $EPHPM_REDIS_SERVER (for
// example valkey-server), else redis-server.
func ServerBinary() string { return envOr("EPHPM_REDIS_SERVER", "redis-server") }

// CLIBinary is the command-line client that goes with it: $EPHPM_REDIS_CLI,
// else redis-cli.
func CLIBinary() string { return envOr("EPHPM_REDIS_CLI", "redis-cli") }

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// launch is run for test t: in t's temporary directory, stopped when t
// ends; it skips t if redis-server is not installed.
func launch(t testing.TB, head string, extra []string, args ...string) *Server {
	t.Helper()
	if _, err := exec.LookPath(ServerBinary()); err != nil {
		t.Skip(ServerBinary() + " not installed")
	}
	s, err := run(t.TempDir(), head, extra, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// configure writes the config of a server on port in dir.
func configure(bin, dir string, port int, head string, extra, args []string) (*Server, error) {
	conf := fmt.Sprintf(head, port, dir)
	for _, line := range extra {
		conf += line + "\n"
	}
	path := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	return &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, Dir: dir, argv: append([]string{bin, path}, args...)}, nil
}

// start starts the process and waits until it answers, by deadline (a
// hang catch); an error if it exited first, or did not answer in time.
func (s *Server) start(deadline time.Time) error {
	s.cmd = exec.Command(s.argv[0], s.argv[1:]...)
	if err := s.cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	s.exited = exited
	go func(cmd *exec.Cmd) { cmd.Wait(); close(exited) }(s.cmd)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("redis-server on %s exited before it answered", s.Addr)
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Addr, 100*time.Millisecond); err == nil {
			pid, known := answeredBy(c)
			c.Close()
			switch {
			case known && pid == s.cmd.Process.Pid:
				return nil
			case known:
				// Another process's server took the port after it was
				// found free; this one cannot bind it, and may take a
				// while to exit on a loaded host.
				s.Stop()
				return fmt.Errorf("redis-server on %s: another process (pid %d) answers there", s.Addr, pid)
			}
			// A server that says nothing before a password: this one,
			// unless it exits at once for want of the port.
			select {
			case <-exited:
				s.cmd = nil
				return fmt.Errorf("redis-server on %s exited; another process answers there", s.Addr)
			case <-time.After(10 * time.Millisecond):
				return nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	s.Stop()
	return fmt.Errorf("redis-server on %s did not answer within %v", s.Addr, startLimit)
}

// answeredBy is the process id that the server on c gives in its INFO
// (known false if it gives none: a server that wants a password first, or
// that does not answer within a second).
func answeredBy(c net.Conn) (pid int, known bool) {
	if c.SetDeadline(time.Now().Add(time.Second)) != nil {
		return 0, false
	}
	if _, err := c.Write([]byte("*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		return 0, false
	}
	const field = "process_id:"
	var b []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		b = append(b, buf[:n]...)
		if i := bytes.Index(b, []byte(field)); i >= 0 {
			if j := bytes.IndexByte(b[i:], '\r'); j >= 0 {
				pid, err := strconv.Atoi(string(b[i+len(field) : i+j]))
				return pid, err == nil
			}
		}
		if err != nil || (len(b) > 0 && b[0] == '-' && bytes.HasSuffix(b, []byte("\r\n"))) {
			return 0, false
		}
	}
}

// Stop kills the server and waits for it.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		<-s.exited
		s.cmd = nil
	}
}

// Restart starts the server again on the same port, with the same config.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(time.Now().Add(startLimit)); err != nil {
		t.Fatal(err)
	}
}
