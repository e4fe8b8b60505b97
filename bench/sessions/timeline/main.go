// Command timeline reads a Redis MONITOR recording of session requests
// (bench/sessions -monitor) and splits the time of each hand-off of a
// session lock: from the release (the server's time of the script that
// deleted the lock or handed it on) to the grant (the script that took the
// lock for the next holder, or claimed the lock handed to it), and from
// the grant to that holder's release (the hold: the grant's reply, PHP's
// work, the release's send).
// Times are the server's, in the order it ran the commands.
//
//	go run ./bench/sessions/timeline /tmp/mon.1
package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var grants, releases []float64
	var gaps, holds []time.Duration
	lastRelease, lastGrant := -1.0, -1.0
	cmds := map[string]int{}
	// The commands a script ran, judged when the next call begins: a
	// release deletes the lock, or sets it (to the next holder's token)
	// and publishes; a grant sets it without publishing, or claims it
	// (PEXPIRE, PERSIST: a lock handed over by a release).
	var callAt float64
	var set, del, publish, claim bool
	judge := func() {
		switch {
		case del || set && publish:
			releases = append(releases, callAt)
			if lastGrant >= 0 {
				holds = append(holds, time.Duration((callAt-lastGrant)*1e9))
			}
			lastRelease = callAt
		case set || claim:
			grants = append(grants, callAt)
			if lastRelease >= 0 {
				gaps = append(gaps, time.Duration((callAt-lastRelease)*1e9))
			}
			lastGrant = callAt
		}
		set, del, publish, claim = false, false, false, false
	}
	for sc.Scan() {
		line := sc.Text()
		ts, rest, ok := strings.Cut(line, " [")
		if !ok {
			continue
		}
		t, err := strconv.ParseFloat(ts, 64)
		if err != nil {
			continue
		}
		who, args, _ := strings.Cut(rest, "] ")
		fields := strings.Fields(args)
		if len(fields) == 0 {
			continue
		}
		name := strings.ToLower(strings.Trim(fields[0], `"`))
		if !strings.HasSuffix(who, " lua") {
			judge()
			callAt = t
			cmds[name]++
			continue
		}
		lockKey := len(fields) > 1 && strings.HasPrefix(strings.Trim(fields[1], `"`), "session_lock:")
		switch {
		case name == "publish":
			publish = true
		case !lockKey:
		case name == "set":
			set = true
		case name == "del":
			del = true
		case name == "pexpire" || name == "persist":
			claim = true
		}
	}
	judge()
	show := func(what string, d []time.Duration) {
		if len(d) == 0 {
			fmt.Printf("%s: none\n", what)
			return
		}
		slices.Sort(d)
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		fmt.Printf("%-40s n=%d p50=%v p90=%v max=%v mean=%v sum=%v\n", what, len(d),
			d[len(d)/2].Round(time.Microsecond), d[len(d)*9/10].Round(time.Microsecond),
			d[len(d)-1].Round(time.Microsecond), (sum / time.Duration(len(d))).Round(time.Microsecond),
			sum.Round(time.Microsecond))
	}
	if len(grants) > 0 && len(releases) > 0 {
		fmt.Printf("first grant to last release: %v, %d grants, %d releases\n",
			time.Duration((releases[len(releases)-1]-grants[0])*1e9).Round(time.Microsecond), len(grants), len(releases))
	}
	show("release -> next grant (hand-off)", gaps)
	show("grant -> release (hold)", holds)
	var per []string
	for k, v := range cmds {
		per = append(per, fmt.Sprintf("%s=%d", k, v))
	}
	slices.Sort(per)
	fmt.Println("commands clients sent:", strings.Join(per, " "))
}
