// Command handoff measures how fast a released lock passes to a waiter,
// with the store's Wait (woken by the release) and without it (polling with
// the 10 ms doubling to 100 ms backoff), and how long 100 concurrent
// "requests" on one session take against their serial limit.
//
//	go run ./bench/handoff
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/lockwait"
	"github.com/ephpm/ephpm/memstore"
	"github.com/ephpm/ephpm/sessionkeys"
)

type polling struct{ s *memstore.Store }

func (p polling) SetNX(k string, v []byte, ttl time.Duration) (contract.SetNXOutcome, error) {
	return p.s.SetNX(k, v, ttl)
}

type waiting struct{ polling }

func (w waiting) Wait(k string, d time.Duration) (bool, error) { return w.s.Wait(k, d), nil }

type mode struct {
	name  string
	store func(*memstore.Store) lockwait.Store
}

var modes = []mode{
	{"with wait", func(s *memstore.Store) lockwait.Store { return waiting{polling{s}} }},
	{"without wait (sleep)", func(s *memstore.Store) lockwait.Store { return polling{s} }},
}

// requests runs n requests released together on one session. Each takes
// the lock once, reads the data, holds the lock for hold, writes the data
// back one byte longer (guarded by the lock) and releases. It returns the
// wall time of the run and, for every acquisition after the first, the time
// since the previous release: the hand-off latency.
func requests(st lockwait.Store, s *memstore.Store, n int, hold time.Duration) (time.Duration, []time.Duration) {
	locker := &lockwait.Locker{Store: st}
	var released atomic.Int64 // unix ns of the last release; 0 before the first
	var mu sync.Mutex
	var handoffs []time.Duration
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer done.Done()
			tok, _ := sessionkeys.NewToken()
			ready.Done()
			<-start
			res, err := locker.Acquire(sessionkeys.LockKey("bench"), []byte(tok), time.Minute, time.Minute)
			if err != nil || !res.Acquired {
				panic(fmt.Sprint("acquire: ", err))
			}
			if r := released.Load(); r != 0 {
				mu.Lock()
				handoffs = append(handoffs, time.Duration(time.Now().UnixNano()-r))
				mu.Unlock()
			}
			v, _ := s.Get(sessionkeys.DataKey("bench"))
			time.Sleep(hold)
			backend.SetGuarded(s, sessionkeys.DataKey("bench"), append(append([]byte{}, v...), 'x'), time.Minute, sessionkeys.LockKey("bench"), []byte(tok))
			released.Store(time.Now().UnixNano())
			s.DelIfEq(sessionkeys.LockKey("bench"), []byte(tok))
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	return time.Since(t0), handoffs
}

func pct(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func main() {
	n := flag.Int("requests", 100, "concurrent requests on one session")
	hold := flag.Duration("hold", 2*time.Millisecond, "lock hold time of each request")
	rounds := flag.Int("rounds", 3, "runs per mode")
	flag.Parse()

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "mode\thand-off p50\thand-off p99\t%d requests (median run)\tserial limit\tkept\t\n", *n)
	for _, m := range modes {
		var all, runs []time.Duration
		kept := 0
		for r := 0; r < *rounds; r++ {
			s := memstore.New(memstore.Options{})
			run, lat := requests(m.store(s), s, *n, *hold)
			v, _ := s.Get(sessionkeys.DataKey("bench"))
			kept = min(kept, len(v))
			if r == 0 {
				kept = len(v)
			}
			all = append(all, lat...)
			runs = append(runs, run)
			s.Close()
		}
		fmt.Fprintf(w, "%s\t%v\t%v\t%v\t%v\t%d/%d\t\n", m.name,
			pct(all, 0.50).Round(time.Microsecond), pct(all, 0.99).Round(time.Microsecond),
			pct(runs, 0.5).Round(time.Millisecond), time.Duration(*n)**hold, kept, *n)
	}
	w.Flush()
}
