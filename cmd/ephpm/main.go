// Command ephpm looks at and serves an ephpm store: a pool's shared-memory
// segment (the default: the one php-fpm's pool "www" uses) or a Redis
// server.
//
//	ephpm [target] stats                 the store's figures
//	ephpm [target] locks                 held locks and session locks: key, TTL left, holder, waiters
//	ephpm [target] keys [PREFIX]         keys with sizes and TTLs, page by page
//	ephpm [target] get KEY               a key's value
//	ephpm [target] del KEY               remove a key
//	ephpm [target] check                 the segment's integrity, as the store's own check sees it
//	ephpm [target] flush [--yes]         remove every key, after a confirmation
//	ephpm [target] path                  the segment's files, one a line
//	ephpm [target] serve [--unix PATH]   a RESP endpoint onto the segment
//
// target: --pool POOL (default www: the segment php-fpm's pool POOL uses
// by default), --segment NAME (the segment ephpm.kv_backend=shm://NAME
// names), or --redis URL; --user USER for another user's segment (as root:
// the file's permissions decide). Every command takes --json for output a
// script reads. The exit status is 0 on success, 1 on failure (a missing
// segment, a key not found, a check that found damage), 2 on a usage
// error.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/ephpm/ephpm/backend"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// env is what a command runs with: its streams, and the options every
// command takes.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	opts           *options
	// stop, when closed, stops a serve as SIGTERM does (a test's; nil in
	// the command).
	stop <-chan struct{}
	// wrap, if set (a test's), is put around the store a command opens:
	// what the command calls in its place.
	wrap func(backend.Backend) backend.Backend
}

// command is one subcommand: run gets the arguments after its name.
type command struct {
	name, args, help string
	run              func(e *env, args []string) int
}

var commands []command

func init() {
	commands = []command{
		{"stats", "", "the store's figures", runStats},
		{"locks", "", "held locks and session locks: key, TTL left, holder process, waiters", runLocks},
		{"keys", "[PREFIX]", "keys with their sizes and TTLs, page by page", runKeys},
		{"get", "KEY", "a key's value (raw on standard output)", runGet},
		{"del", "KEY", "remove a key", runDel},
		{"check", "", "the segment's integrity, as the store's own check sees it (holds each shard while it walks it)", runCheck},
		{"flush", "[--yes]", "remove every key, locks and sessions included, after a confirmation", runFlush},
		{"path", "", "the segment's files (the segment, then its fence file), whether or not they exist", runPath},
		{"serve", "[--unix PATH]", "serve the segment over RESP: TCP with a password (or --no-auth), or a socket only its user opens", runServe},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: ephpm [--pool POOL | --segment NAME | --redis URL] [--user USER] [--json] COMMAND [ARGS]\n\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-7s %-16s %s\n", c.name, c.args, c.help)
	}
	fmt.Fprintf(w, "\nThe default target is the segment php-fpm's pool www uses (--pool www).\n")
	fmt.Fprintf(w, "Run ephpm COMMAND --help for a command's options.\n")
}

// run is the command line's outcome: its exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runIn(&env{stdin: stdin, stdout: stdout, stderr: stderr}, args)
}

// runIn is run with e's streams (and stop).
func runIn(e *env, args []string) int {
	e.opts = &options{}
	global := newFlags("ephpm", e.opts, e.stderr)
	global.Usage = func() { usage(e.stderr) }
	if err := global.Parse(args); err != nil {
		return 2
	}
	rest := global.Args()
	if len(rest) == 0 {
		usage(e.stderr)
		return 2
	}
	for _, c := range commands {
		if c.name == rest[0] {
			return c.run(e, rest[1:])
		}
	}
	fmt.Fprintf(e.stderr, "ephpm: unknown command %q\n", rest[0])
	usage(e.stderr)
	return 2
}
