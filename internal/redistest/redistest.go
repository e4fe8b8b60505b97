// Package redistest starts throwaway redis-server processes on 127.0.0.1
// for tests, and stops them by PID when the test ends.
package redistest

import (
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Server is a running redis-server.
type Server struct {
	Addr string
	Port int
	Dir  string
	cmd  *exec.Cmd
}

// Start runs redis-server on a free port with extra config lines ("key
// value"), waits until it answers, and stops it when t ends. It skips t if
// redis-server is not installed (scripts/setup.sh test installs it).
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	dir := t.TempDir()
	port := FreePort(t)
	conf := fmt.Sprintf("bind 127.0.0.1\nport %d\ndir %s\nsave \"\"\nappendonly no\n", port, dir)
	for _, line := range extra {
		conf += line + "\n"
	}
	path := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, Dir: dir}
	s.cmd = exec.Command(bin, path)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	s.waitUp(t)
	return s
}

func (s *Server) waitUp(t testing.TB) {
	for i := 0; i < 200; i++ {
		if c, err := net.DialTimeout("tcp", s.Addr, 100*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("redis-server on %s did not start", s.Addr)
}

// Stop kills the server and waits for it.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// Restart starts the server again on the same port.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	s.cmd = exec.Command(s.cmd0(), filepath.Join(s.Dir, "redis.conf"))
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.waitUp(t)
}

func (s *Server) cmd0() string {
	bin, _ := exec.LookPath("redis-server")
	return bin
}

// StartSentinel runs a Sentinel (redis-server --sentinel) that monitors
// master under the name "mymaster", and waits until it knows the master.
func StartSentinel(t testing.TB, master *Server) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	dir := t.TempDir()
	port := FreePort(t)
	conf := fmt.Sprintf("bind 127.0.0.1\nport %d\ndir %s\nsentinel monitor mymaster 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds mymaster 5000\n", port, dir, master.Port)
	path := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, Dir: dir}
	s.cmd = exec.Command(bin, path, "--sentinel")
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	s.waitUp(t)
	return s
}
