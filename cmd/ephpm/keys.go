package main

import (
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/sessionkeys"
)

// walk calls each for every entry of t's store (only locks with
// locksOnly) whose key begins with prefix, a page at a time from cursor,
// a page of count(): every entry of a page, so that the cursor it returns
// goes on after the page; once each returned false, or the walk ended
// (cursor 0), it returns the cursor and the parts it skipped.
func walk(t *target, cursor uint64, count func() int, locksOnly bool, prefix string, each func(backend.KeyInfo) bool) (uint64, []string, error) {
	var skipped []string
	for {
		page, err := t.b.Scan(prefix, cursor, count(), locksOnly)
		if err != nil {
			return cursor, skipped, err
		}
		skipped = append(skipped, page.Skipped...)
		cursor = page.Next
		more := true
		for _, k := range page.Keys {
			more = each(k) && more
		}
		if cursor == 0 || !more {
			return cursor, skipped, nil
		}
	}
}

// keyJSON is one key as --json prints it.
type keyJSON struct {
	Key       string `json:"key"`
	Size      int64  `json:"size"`
	TTLMS     int64  `json:"ttl_ms"`
	Kind      string `json:"kind"`
	Lock      bool   `json:"lock"`
	Mode      string `json:"mode,omitempty"`
	Readers   int    `json:"readers,omitempty"`
	HolderPID int    `json:"holder_pid,omitempty"`
	// Waiters is -1 where the store cannot say (Redis, outside ephpm locks).
	Waiters int `json:"waiters"`
}

func toJSON(k backend.KeyInfo) keyJSON {
	j := keyJSON{Key: k.Key, Size: k.Size, TTLMS: ttlMS(k.TTL), Kind: kindOf(k).String(), Lock: k.Lock, Readers: k.Readers, HolderPID: k.HolderPID, Waiters: k.Waiters}
	if k.Lock {
		j.Mode = mode(k)
	}
	return j
}

// kindOf is k's kind, session data told by the session handler's prefix.
func kindOf(k backend.KeyInfo) backend.Kind { return k.Kind(sessionkeys.DataPrefix) }

func mode(k backend.KeyInfo) string {
	if kindOf(k) == backend.KindSharedLock {
		return "shared"
	}
	return "exclusive"
}

// shown is a key as a terminal shows it: bytes that are not printable
// UTF-8 as Go escapes.
func shown(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return s
	}
	q := fmt.Sprintf("%q", s)
	return q
}

func runKeys(e *env, args []string) int {
	var limit, count int
	var cursor uint64
	pos, ok := parseFlags(e, "keys", args, func(fs *flag.FlagSet) {
		fs.IntVar(&limit, "limit", 0, "stop after about this many keys (the rest of a page is printed) and print the cursor to go on from (0: every key)")
		fs.IntVar(&count, "count", 1000, "entries per page: each page holds a shard's lock at most this long")
		fs.Uint64Var(&cursor, "cursor", 0, "the cursor a --limit run printed")
	})
	if !ok || len(pos) > 1 {
		if ok {
			fmt.Fprintln(e.stderr, "usage: ephpm keys [PREFIX] [--limit N] [--cursor C] [--count N] [--json]")
		}
		return 2
	}
	prefix := ""
	if len(pos) == 1 {
		prefix = pos[0]
	}
	t, err := open(e)
	if err != nil {
		return fail(e, err)
	}
	defer t.b.Close()
	var keys []keyJSON
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if !e.opts.json {
		fmt.Fprintln(tw, "KEY\tSIZE\tTTL\tKIND")
	}
	n := 0
	pageSize := func() int {
		if limit > 0 && prefix == "" {
			return max(min(count, limit-n), 1)
		}
		return count
	}
	next, skipped, err := walk(t, cursor, pageSize, false, prefix, func(k backend.KeyInfo) bool {
		n++
		if e.opts.json {
			keys = append(keys, toJSON(k))
			return limit == 0 || n < limit
		}
		kind := kindOf(k).String()
		size := fmt.Sprint(k.Size)
		if k.Size < 0 {
			size = "?"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", shown(k.Key), size, ttl(k.TTL), kind)
		return limit == 0 || n < limit
	})
	if e.opts.json {
		if keys == nil {
			keys = []keyJSON{}
		}
		out := map[string]any{"store": t.describe, "keys": keys, "next_cursor": next, "skipped": orEmpty(skipped)}
		if err != nil {
			out["error"] = err.Error()
		}
		printJSON(e, out)
	} else {
		tw.Flush()
		fmt.Fprintf(e.stdout, "%d keys", n)
		if prefix != "" {
			fmt.Fprintf(e.stdout, " beginning with %q", prefix)
		}
		fmt.Fprintf(e.stdout, " in %s\n", t.describe)
		incomplete(e, skipped)
		if next != 0 && err == nil {
			fmt.Fprintf(e.stdout, "more: ephpm keys %s--cursor %d\n", prefixArg(prefix), next)
		}
	}
	return report(e, skipped, err)
}

func prefixArg(p string) string {
	if p == "" {
		return ""
	}
	return fmt.Sprintf("%q ", p)
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// incomplete says, after a walk's count, that the count is not the
// store's when the walk skipped parts of it.
func incomplete(e *env, skipped []string) {
	if len(skipped) > 0 {
		fmt.Fprintf(e.stdout, "incomplete: the walk skipped %d damaged part(s) of the store, named below\n", len(skipped))
	}
}

// report says what a walk skipped or failed on: status 1 if anything.
func report(e *env, skipped []string, err error) int {
	for _, s := range skipped {
		fmt.Fprintf(e.stderr, "ephpm: skipped: %s\n", s)
	}
	if err != nil {
		return fail(e, err)
	}
	if len(skipped) > 0 {
		return 1
	}
	return 0
}

func runLocks(e *env, args []string) int {
	if _, ok := parseFlags(e, "locks", args, nil); !ok {
		return 2
	}
	t, err := open(e)
	if err != nil {
		return fail(e, err)
	}
	defer t.b.Close()
	var locks []keyJSON
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if !e.opts.json {
		fmt.Fprintln(tw, "KEY\tTTL\tHOLDER\tWAITERS\tMODE")
	}
	n := 0
	_, skipped, err := walk(t, 0, func() int { return 1000 }, true, "", func(k backend.KeyInfo) bool {
		n++
		if e.opts.json {
			locks = append(locks, toJSON(k))
			return true
		}
		holder := "-"
		if k.HolderPID != 0 {
			holder = fmt.Sprintf("pid %d", k.HolderPID)
		}
		m := mode(k)
		if k.Readers > 0 {
			m = fmt.Sprintf("shared (%d readers)", k.Readers)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", shown(k.Key), ttl(k.TTL), holder, k.Waiters, m)
		return true
	})
	if e.opts.json {
		if locks == nil {
			locks = []keyJSON{}
		}
		out := map[string]any{"store": t.describe, "locks": locks, "skipped": orEmpty(skipped)}
		if err != nil {
			out["error"] = err.Error()
		}
		printJSON(e, out)
	} else {
		tw.Flush()
		fmt.Fprintf(e.stdout, "%d locks held in %s\n", n, t.describe)
		incomplete(e, skipped)
		if t.seg == nil {
			fmt.Fprintln(e.stdout, "(on Redis a lock is a plain key: these are the session locks, the read-held names and the names with waiters in line)")
		}
	}
	return report(e, skipped, err)
}

func runGet(e *env, args []string) int {
	pos, ok := parseFlags(e, "get", args, nil)
	if !ok || len(pos) != 1 {
		if ok {
			fmt.Fprintln(e.stderr, "usage: ephpm get KEY [--json]")
		}
		return 2
	}
	key := pos[0]
	t, err := open(e)
	if err != nil {
		return fail(e, err)
	}
	defer t.b.Close()
	value, found, left, err := getWithTTL(t, key)
	if err != nil {
		return fail(e, err)
	}
	if e.opts.json {
		out := map[string]any{"key": key, "found": found}
		if found {
			out["size"] = len(value)
			out["ttl_ms"] = left
			if utf8.Valid(value) {
				out["value"] = string(value)
			} else {
				out["value_base64"] = value
			}
		}
		printJSON(e, out)
		if !found {
			return 1
		}
		return 0
	}
	if !found {
		return fail(e, fmt.Errorf("no key %s in %s", shown(key), t.describe))
	}
	e.stdout.Write(value)
	return 0
}

// getWithTTL reads key's value and then its TTL left (ms, cut; -1 for
// none): two calls, each at its own instant. A TTL that cannot be read
// is an error, never "no TTL"; a key gone between the two is read again.
func getWithTTL(t *target, key string) (value []byte, found bool, left int64, err error) {
	for attempt := 0; attempt < 3; attempt++ {
		for size := 4096; ; {
			buf := make([]byte, size)
			n, f, err := t.b.GetInto(key, buf)
			if err != nil {
				return nil, false, 0, err
			}
			found = f
			if !f || n <= len(buf) {
				value = buf[:n]
				break
			}
			size = n // grew meanwhile: again
		}
		if !found {
			return nil, false, 0, nil
		}
		d, f, err := t.b.PTTL(key)
		if err != nil {
			return nil, false, 0, fmt.Errorf("the TTL of %s: %w", shown(key), err)
		}
		if f {
			return value, true, ttlMS(d), nil
		}
	}
	return nil, false, 0, fmt.Errorf("%s came and went while it was read: try again", shown(key))
}

func runDel(e *env, args []string) int {
	pos, ok := parseFlags(e, "del", args, nil)
	if !ok || len(pos) != 1 {
		if ok {
			fmt.Fprintln(e.stderr, "usage: ephpm del KEY [--json]")
		}
		return 2
	}
	t, err := open(e)
	if err != nil {
		return fail(e, err)
	}
	defer t.b.Close()
	removed, err := t.b.Del(pos[0])
	if err != nil {
		return fail(e, err)
	}
	if e.opts.json {
		return printJSON(e, map[string]any{"key": pos[0], "deleted": removed})
	}
	if removed {
		fmt.Fprintf(e.stdout, "deleted %s\n", shown(pos[0]))
	} else {
		fmt.Fprintf(e.stdout, "no key %s: nothing deleted\n", shown(pos[0]))
	}
	return 0
}
