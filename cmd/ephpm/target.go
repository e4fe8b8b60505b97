package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/internal/segname"
	"github.com/ephpm/ephpm/redisstore"
	"github.com/ephpm/ephpm/sessionkeys"
	"github.com/ephpm/ephpm/shm"
)

// options are the flags every command takes, before or after its name.
type options struct {
	pool, segment, redis, user, dir string
	json                            bool
}

// newFlags is a flag set with the common options.
func newFlags(name string, o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.pool, "pool", orDefault(o.pool, "www"), "the php-fpm pool whose default segment to open")
	fs.StringVar(&o.segment, "segment", o.segment, "the segment NAME (ephpm.kv_backend=shm://NAME), instead of the pool's")
	fs.StringVar(&o.redis, "redis", o.redis, "a Redis URL (as ephpm.kv_backend takes it), instead of a segment")
	fs.StringVar(&o.user, "user", o.user, "the user (name or uid) whose segment it is (default: yours; as root, the one user who has it)")
	fs.StringVar(&o.dir, "dir", orDefault(o.dir, "/dev/shm"), "where segment files are")
	fs.BoolVar(&o.json, "json", o.json, "print JSON")
	return fs
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// parseFlags parses a command's arguments with the common options and
// extra ones; it returns the positional arguments, or ok false (status 2).
func parseFlags(e *env, name string, args []string, extra func(fs *flag.FlagSet)) ([]string, bool) {
	fs := newFlags("ephpm "+name, e.opts, e.stderr)
	if extra != nil {
		extra(fs)
	}
	// Flags may follow positional arguments too (ephpm keys lock: --json).
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, false
		}
		if fs.NArg() == 0 {
			return pos, true
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// target is an opened store and what to call it.
type target struct {
	b        backend.Backend
	describe string
	seg      *shm.Store // nil on Redis
	uid      int        // the segment's owner (on Redis: none, 0)
}

// open opens what the options name: the segment must exist (it is never
// created, and its settings are left as its servers set them).
func open(e *env) (*target, error) {
	t, err := openStore(e)
	if err == nil && e.wrap != nil {
		t.b = e.wrap(t.b)
	}
	return t, err
}

func openStore(e *env) (*target, error) {
	o := e.opts
	if o.redis != "" {
		if o.segment != "" {
			return nil, errors.New("--redis and --segment name two stores: give one")
		}
		prefixes := []string{sessionkeys.DataPrefix, sessionkeys.LockPrefix}
		r, err := redisstore.Open(o.redis, redisstore.Options{Colocated: prefixes, Pinned: prefixes, LockPrefixes: []string{sessionkeys.LockPrefix}})
		if err != nil {
			return nil, err
		}
		return &target{b: r, describe: "redis " + redisstore.Redact(o.redis)}, nil
	}
	name, uid, err := segmentOf(o)
	if err != nil {
		return nil, err
	}
	s, err := shm.Open(name, shm.Options{Dir: o.dir, Existing: true, Owner: shm.UID(uid)})
	if errors.Is(err, os.ErrNotExist) {
		how := "php-fpm's pool " + o.pool + " makes it at its first ephpm call"
		if o.segment != "" {
			how = "the first process configured with ephpm.kv_backend=shm://" + name + " makes it"
		}
		return nil, fmt.Errorf("no segment %s of uid %d (%s): %s; nothing was created", name, uid, shm.PathOf(o.dir, name, uid), how)
	}
	if err != nil {
		return nil, err
	}
	return &target{b: s, seg: s, uid: uid, describe: "segment " + name + " (" + s.Path() + ")"}, nil
}

// segmentOf is the segment the options name: its name and its owner's
// uid.
func segmentOf(o *options) (name string, uid int, err error) {
	name = o.segment
	if name == "" {
		name = segname.FPMPool(o.pool)
	}
	uid, err = segmentUID(o.dir, name, o.user)
	return name, uid, err
}

// runPath prints the files of the segment the options name, one a line:
// the segment, then its fence file, whether or not they exist. A script
// asks the command for them rather than repeat the rule that names them
// (shm.PathOf).
func runPath(e *env, args []string) int {
	if pos, ok := parseFlags(e, "path", args, nil); !ok || len(pos) != 0 {
		return 2
	}
	if e.opts.redis != "" {
		return fail(e, errors.New("path names a segment's files: a Redis URL names none"))
	}
	name, uid, err := segmentOf(e.opts)
	if err != nil {
		return fail(e, err)
	}
	files := shm.Files(e.opts.dir, name, uid)
	if e.opts.json {
		_, err := os.Stat(files[0])
		return printJSON(e, map[string]any{"segment": files[0], "fences": files[1], "uid": uid, "exists": err == nil})
	}
	for _, f := range files {
		fmt.Fprintln(e.stdout, f)
	}
	return 0
}

// segmentUID is the uid whose segment name is: --user's; else this
// process's; else, for root, the one user who has a segment of that name.
func segmentUID(dir, name, who string) (int, error) {
	if who != "" {
		if uid, err := strconv.Atoi(who); err == nil {
			return uid, nil
		}
		u, err := user.Lookup(who)
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(u.Uid)
	}
	uid := os.Geteuid()
	if _, err := os.Stat(shm.PathOf(dir, name, uid)); err == nil || uid != 0 {
		return uid, nil
	}
	// Root with no segment of its own of that name: the pool's user's.
	uids, _ := shm.Owners(dir, name)
	switch len(uids) {
	case 0:
		return uid, nil
	case 1:
		return uids[0], nil
	}
	return 0, fmt.Errorf("segment %s exists for uids %v: say whose with --user", name, uids)
}

// fail reports err and returns status 1.
func fail(e *env, err error) int {
	fmt.Fprintf(e.stderr, "ephpm: %v\n", err)
	return 1
}
