package shm

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Tests that need real processes re-execute the test binary with
// EPHPM_SHM_WORKER naming the worker function to run instead of the tests.
const workerEnv = "EPHPM_SHM_WORKER"

var workers = map[string]func(){}

func TestMain(m *testing.M) {
	if w := os.Getenv(workerEnv); w != "" {
		f, ok := workers[w]
		if !ok {
			fmt.Fprintf(os.Stderr, "no worker %q\n", w)
			os.Exit(2)
		}
		f()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// worker is a running worker process; its standard output is read line by
// line into lines.
type worker struct {
	cmd   *exec.Cmd
	lines chan string
	stdin io.WriteCloser // set by startWorkerIn
}

// startWorkerIn is startWorker with a pipe to the worker's standard input.
func startWorkerIn(t *testing.T, name string, env []string) *worker {
	t.Helper()
	var in io.WriteCloser
	w := startWorkerWith(t, name, env, func(cmd *exec.Cmd) {
		var err error
		if in, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
	})
	w.stdin = in
	return w
}

// startWorker runs the worker function name with env added; extra become
// its file descriptors 3, 4, ...
func startWorker(t *testing.T, name string, env []string, extra ...*os.File) *worker {
	t.Helper()
	return startWorkerWith(t, name, env, func(cmd *exec.Cmd) { cmd.ExtraFiles = extra })
}

func startWorkerWith(t *testing.T, name string, env []string, setup func(*exec.Cmd)) *worker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), workerEnv+"="+name), env...)
	setup(cmd)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &worker{cmd: cmd, lines: make(chan string, 1024)}
	go func() {
		defer close(w.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
	}()
	return w
}

// expect reads the worker's next line and fails unless it starts with
// prefix; it returns the line.
func (w *worker) expect(t *testing.T, prefix string) string {
	t.Helper()
	l, ok := <-w.lines
	if os.Getenv("SHM_DEBUG") != "" {
		fmt.Fprintln(os.Stderr, w.cmd.Process.Pid, l)
	}
	if !ok || !strings.HasPrefix(l, prefix) {
		t.Fatalf("worker: got %q (open: %v), want %q...", l, ok, prefix)
	}
	return l
}
