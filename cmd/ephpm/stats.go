package main

import (
	"encoding/json"
	"fmt"

	"time"

	"github.com/ephpm/ephpm/contract"
)

func runStats(e *env, args []string) int {
	if _, ok := parseFlags(e, "stats", args, nil); !ok {
		return 2
	}
	t, err := open(e)
	if err != nil {
		return fail(e, err)
	}
	defer t.b.Close()
	st, err := t.b.Stats()
	if err != nil {
		return fail(e, err)
	}
	if e.opts.json {
		return printJSON(e, statsJSON(t, st))
	}
	lookups := st.Hits + st.Misses
	ratio := 0.0
	if lookups > 0 {
		ratio = float64(st.Hits) / float64(lookups)
	}
	w := e.stdout
	row := func(k, format string, a ...any) { fmt.Fprintf(w, "%-12s "+format+"\n", append([]any{k}, a...)...) }
	row("store", "%s (%s)", t.describe, t.b.Name())
	row("keys", "%d", st.Keys)
	limit := "no limit"
	if st.MemoryLimit > 0 {
		limit = sizeOf(st.MemoryLimit)
	}
	row("memory", "%s of %s (eviction %s, compression %s)", sizeOf(st.BytesUsed), limit, st.Eviction, onOff(st.Compression))
	if st.SessionLimit > 0 || st.SessionBytes > 0 {
		row("sessions", "%s of %s", sizeOf(st.SessionBytes), sizeOf(st.SessionLimit))
	}
	row("lookups", "%d hits, %d misses (hit ratio %.1f%%)", st.Hits, st.Misses, 100*ratio)
	row("writes", "%d sets, %d evictions, %d expirations", st.Sets, st.Evictions, st.Expirations)
	row("locks", "set_nx: %d won, %d lost; del_if_eq: %d matched, %d not", st.SetNXWins, st.SetNXLosses, st.DelIfEqMatches, st.DelIfEqMismatches)
	if t.seg != nil {
		row("processes", "%d attached (this one included)", st.Processes)
		row("recoveries", "%d shards recovered from a dead owner", t.seg.Recoveries())
	}
	if len(st.Rates) > 0 {
		r, secs := st.Rates[0], st.RateInterval.Seconds()
		row("last "+st.RateInterval.String(), "%.1f lookups/s, %.1f sets/s, %.1f lock grants/s",
			float64(r.Hits+r.Misses)/secs, float64(r.Sets)/secs, float64(r.SetNXWins)/secs)
	}
	if st.Facts != "" {
		row("facts", "%s", st.Facts)
	}
	row("instance", "%s", st.InstanceID)
	return 0
}

// statsJSON is the stats as ephpm_kv_stats() names them.
func statsJSON(t *target, st contract.Stats) map[string]any {
	m := map[string]any{
		"store": t.describe, "backend": t.b.Name(), "instance_id": st.InstanceID, "keys": st.Keys,
		"bytes_used": st.BytesUsed, "memory_limit": st.MemoryLimit, "session_bytes": st.SessionBytes,
		"session_limit": st.SessionLimit, "eviction": st.Eviction, "compression": st.Compression,
		"hits": st.Hits, "misses": st.Misses, "sets": st.Sets, "evictions": st.Evictions,
		"expirations": st.Expirations, "set_nx_wins": st.SetNXWins, "set_nx_losses": st.SetNXLosses,
		"del_if_eq_matches": st.DelIfEqMatches, "del_if_eq_mismatches": st.DelIfEqMismatches,
		"processes": st.Processes, "facts": st.Facts, "rate_interval_ms": st.RateInterval.Milliseconds(),
		"rates": orNoRates(st.Rates), "shards": orNoShards(st.Shards),
	}
	if t.seg != nil {
		m["recoveries"] = t.seg.Recoveries()
	}
	return m
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// sizeOf is n as a person reads a size.
func sizeOf(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, unit := range []string{"KiB", "MiB", "GiB", "TiB"} {
		f /= 1024
		if f < 1024 || unit == "TiB" {
			return fmt.Sprintf("%.1f %s", f, unit)
		}
	}
	return ""
}

// ttl is a TTL as a person reads it, cut (never rounded up: a lock
// never looks longer-lived than it is): "-" for none.
func ttl(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Second:
		return d.Truncate(time.Millisecond).String()
	case d < time.Minute:
		return d.Truncate(100 * time.Millisecond).String()
	}
	return d.Truncate(time.Second).String()
}

// ttlMS is a TTL as JSON gives it: milliseconds, -1 for none.
func ttlMS(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

func printJSON(e *env, v any) int {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fail(e, err)
	}
	return 0
}

func orNoRates(r []contract.RateCounts) []contract.RateCounts {
	if r == nil {
		return []contract.RateCounts{}
	}
	return r
}

func orNoShards(s []contract.ShardStats) []contract.ShardStats {
	if s == nil {
		return []contract.ShardStats{}
	}
	return s
}
