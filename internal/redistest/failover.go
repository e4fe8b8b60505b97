package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"time"
)

// Replicated deployments: a replica of a master, and Sentinels that can
// fail the master over to it. The Start* functions are for tests (stopped
// when the test ends); the Run* functions are the same outside a test
// (bench/failover): the caller stops each server (Stop) and removes the
// parent directory.

const serverHead = "bind 127.0.0.1\nport %d\ndir %s\nsave \"\"\nappendonly no\n"
const sentinelHead = "bind 127.0.0.1\nport %d\ndir %s\n"

// ReplicaOf is the config line that makes a server a replica of master.
func ReplicaOf(master *Server) string {
	return fmt.Sprintf("replicaof 127.0.0.1 %d", master.Port)
}

// SentinelConfig is the config of a Sentinel monitoring master as
// "mymaster": quorum Sentinels must find it down, each after downAfter
// without a valid reply, and a failover that has not ended after
// failoverTimeout is abandoned (and not tried again for twice that).
func SentinelConfig(master *Server, quorum int, downAfter, failoverTimeout time.Duration) []string {
	return []string{
		fmt.Sprintf("sentinel monitor mymaster 127.0.0.1 %d %d", master.Port, quorum),
		fmt.Sprintf("sentinel down-after-milliseconds mymaster %d", downAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout mymaster %d", failoverTimeout.Milliseconds()),
	}
}

// Run is Start outside a test: the server's directory is made under
// parent. It fails if redis-server is not installed.
func Run(parent string, extra ...string) (*Server, error) {
	return run(parent, serverHead, extra)
}

// RunSentinel runs a Sentinel monitoring master as "mymaster" (see
// SentinelConfig) outside a test.
func RunSentinel(parent string, master *Server, quorum int, downAfter, failoverTimeout time.Duration) (*Server, error) {
	return run(parent, sentinelHead, SentinelConfig(master, quorum, downAfter, failoverTimeout), "--sentinel")
}

// run writes a server's config (head, then the extra lines) in a new
// directory under parent and runs redis-server with it, on a port found
// free. A port found free can be taken by another process before the
// server binds it (the packages' tests run at once): a server that exits,
// or a port that answers while the server is gone, starts over on another
// port, until startLimit.
func run(parent, head string, extra []string, args ...string) (*Server, error) {
	bin, err := exec.LookPath(ServerBinary())
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(startLimit)
	for {
		dir, err := os.MkdirTemp(parent, "redis")
		if err != nil {
			return nil, err
		}
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := configure(bin, dir, port, head, extra, args)
		if err != nil {
			return nil, err
		}
		err = s.start(deadline)
		if err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
	}
}

// PID is the running server's process id (0 when it is not running).
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// StartAgain starts a stopped server again on the same port, with the same
// config and, for this run only, the extra command-line arguments (such as
// "--replicaof", "127.0.0.1", "6380"), and waits until it answers.
func (s *Server) StartAgain(args ...string) error {
	if s.cmd != nil {
		return fmt.Errorf("redis-server on %s is running", s.Addr)
	}
	argv := s.argv
	s.argv = append(append([]string(nil), argv...), args...)
	defer func() { s.argv = argv }()
	return s.start(time.Now().Add(startLimit))
}

// Signal sends sig to the running server (SIGSTOP and SIGCONT stand for a
// server that stops answering for a while).
func (s *Server) Signal(sig os.Signal) error {
	if s.cmd == nil || s.cmd.Process == nil {
		return fmt.Errorf("redis-server on %s is not running", s.Addr)
	}
	return s.cmd.Process.Signal(sig)
}
