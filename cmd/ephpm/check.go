package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"strings"
)

func runCheck(e *env, args []string) int {
	if _, ok := parseFlags(e, "check", args, nil); !ok {
		return 2
	}
	t, err := open(e)
	if err != nil {
		return fail(e, err)
	}
	defer t.b.Close()
	if t.seg == nil {
		// Redis keeps its own data's integrity; what this can check is
		// that the server answers.
		_, err := t.b.Stats()
		if e.opts.json {
			out := map[string]any{"store": t.describe, "ok": err == nil, "problems": []string{}}
			if err != nil {
				out["problems"] = []string{err.Error()}
			}
			printJSON(e, out)
		} else if err == nil {
			fmt.Fprintf(e.stdout, "%s answers; Redis checks its own data (there is no segment to check)\n", t.describe)
		}
		if err != nil {
			return fail(e, err)
		}
		return 0
	}
	err = t.seg.Check()
	var problems []string
	if err != nil {
		for _, l := range strings.Split(err.Error(), "\n") {
			if l != "" {
				problems = append(problems, l)
			}
		}
	}
	if e.opts.json {
		printJSON(e, map[string]any{"store": t.describe, "ok": err == nil, "problems": orEmpty(problems)})
	} else if err == nil {
		fmt.Fprintf(e.stdout, "%s: every shard is consistent\n", t.describe)
	} else {
		fmt.Fprintf(e.stdout, "%s: %d problems\n", t.describe, len(problems))
		for _, p := range problems {
			fmt.Fprintf(e.stdout, "  %s\n", p)
		}
	}
	if err != nil {
		return 1
	}
	return 0
}

func runFlush(e *env, args []string) int {
	var yes bool
	if _, ok := parseFlags(e, "flush", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&yes, "yes", false, "flush without asking")
	}); !ok {
		return 2
	}
	t, err := open(e)
	if err != nil {
		return fail(e, err)
	}
	defer t.b.Close()
	if !yes {
		fmt.Fprintf(e.stderr, "Remove every key of %s, locks and sessions included? Type yes: ", t.describe)
		line, _ := bufio.NewReader(e.stdin).ReadString('\n')
		if strings.TrimSpace(line) != "yes" {
			return fail(e, errors.New("not confirmed: nothing was removed (--yes flushes without asking)"))
		}
	}
	if err := t.b.Flush(); err != nil {
		return fail(e, err)
	}
	if e.opts.json {
		return printJSON(e, map[string]any{"store": t.describe, "flushed": true})
	}
	fmt.Fprintf(e.stdout, "flushed %s\n", t.describe)
	return 0
}
