// Command shmhandoff measures how fast a lock released in one process
// passes to a process waiting for it on the shared-memory store: -procs
// processes (this program run again) released together at a barrier, each
// taking one lock -rounds times with SetNX, waiting with Wait (woken by the
// release) when it is held, holding it for -hold, and releasing it with
// DelIfEq. The releaser stores its pid and CLOCK_MONOTONIC beside the lock
// just before the release; the next holder, if it is another process that
// found the lock held and waited, takes the difference: the hand-off
// latency. After a release a process
// sleeps for -gap (the rest of its request), so that the lock passes to a
// waiter rather than back to the releaser.
//
//	go run ./bench/shmhandoff
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/shm"
)

const childEnv = "EPHPM_SHMHANDOFF_CHILD"

func monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func child(name string, rounds int, hold, gap time.Duration) {
	s, err := shm.Open(name, shm.Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	defer s.Close()
	token := []byte(strconv.Itoa(os.Getpid()))
	pid := uint64(os.Getpid())
	rel := make([]byte, 16)
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadByte() // the barrier
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for r := 0; r < rounds; r++ {
		waited := false
		for {
			o, err := s.SetNX("lock", token, 10*time.Second)
			if err != nil {
				fmt.Fprintln(out, "error", err)
				return
			}
			if o == contract.Inserted {
				break
			}
			waited = true
			if _, err := s.Wait("lock", time.Second); err != nil {
				fmt.Fprintln(out, "error", err)
				return
			}
		}
		got := monotonic()
		// A hand-off: this process found the lock held and another one
		// released it to it (the release came after the failed SetNX).
		if n, found, _ := s.GetInto("released", rel); waited && found && n == 16 && binary.LittleEndian.Uint64(rel) != pid {
			fmt.Fprintln(out, got-int64(binary.LittleEndian.Uint64(rel[8:])))
		}
		for end := time.Now().Add(hold); time.Now().Before(end); {
		}
		binary.LittleEndian.PutUint64(rel, pid)
		binary.LittleEndian.PutUint64(rel[8:], uint64(monotonic()))
		s.Set("released", rel, 0)
		if ok, err := s.DelIfEq("lock", token); !ok || err != nil {
			fmt.Fprintln(out, "error: release", ok, err)
			return
		}
		time.Sleep(gap) // the rest of a request: the waiter's turn

	}
}

func main() {
	procs := flag.Int("procs", 8, "processes contending for the lock")
	rounds := flag.Int("rounds", 2000, "acquisitions per process")
	hold := flag.Duration("hold", 20*time.Microsecond, "time each holder keeps the lock (busy)")
	gap := flag.Duration("gap", 200*time.Microsecond, "time a process sleeps after a release before it takes the lock again")
	flag.Parse()
	name := fmt.Sprintf("handoff-%d", os.Getpid())
	if os.Getenv(childEnv) != "" {
		child(os.Getenv(childEnv), *rounds, *hold, *gap)
		return
	}
	s, err := shm.Open(name, shm.Options{Memory: contract.MemoryConfig{Limit: shm.MinMemoryLimit}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.Remove(s.Path())
	defer s.Close()

	type proc struct {
		cmd   *exec.Cmd
		lines *bufio.Scanner
		go_   interface{ Write([]byte) (int, error) }
	}
	var ps []proc
	for i := 0; i < *procs; i++ {
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		cmd.Env = append(os.Environ(), childEnv+"="+name)
		cmd.Stderr = os.Stderr
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		sc := bufio.NewScanner(out)
		if !sc.Scan() || sc.Text() != "ready" {
			fmt.Fprintln(os.Stderr, "child:", sc.Text())
			os.Exit(1)
		}
		ps = append(ps, proc{cmd, sc, in})
	}
	start := time.Now()
	for _, p := range ps {
		p.go_.Write([]byte{1})
	}
	var lat []time.Duration
	for _, p := range ps {
		for p.lines.Scan() {
			l := p.lines.Text()
			if strings.HasPrefix(l, "error") {
				fmt.Fprintln(os.Stderr, "child:", l)
				os.Exit(1)
			}
			ns, _ := strconv.ParseInt(l, 10, 64)
			lat = append(lat, time.Duration(ns))
		}
		p.cmd.Wait()
	}
	wall := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(float64(len(lat))*p))] }
	fmt.Printf("%d processes, %d acquisitions each, hold %v, gap %v: %d hand-offs to a waiting process in %v\n",
		*procs, *rounds, *hold, *gap, len(lat), wall.Round(time.Millisecond))
	fmt.Printf("hand-off p50 %v, p90 %v, p99 %v, max %v\n", pct(0.5), pct(0.9), pct(0.99), lat[len(lat)-1])
}
