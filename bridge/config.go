package bridge

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/redisstore"
	"github.com/ephpm/ephpm/shm"
)

// setting is one setting of the configure member: every setting the table
// takes is a row of settings, and nothing else parses one. The name is the
// php.ini name without "ephpm." and "kv_" (ephpm.kv_eviction: "eviction");
// names and words are lowercase and matched exactly.
type setting struct {
	name  string
	apply func(value string) error
}

var settings = []setting{
	{"memory_limit", memorySetting(func(c *contract.MemoryConfig, v string) (err error) {
		c.Limit, err = parseSize(v, math.MaxInt64)
		return err
	})},
	{"session_memory_limit", memorySetting(func(c *contract.MemoryConfig, v string) (err error) {
		c.SessionLimit, err = parseSize(v, math.MaxInt64)
		return err
	})},
	{"eviction", memorySetting(func(c *contract.MemoryConfig, v string) (err error) {
		c.Policy, err = contract.ParsePolicy(v)
		return err
	})},
	{"compression", memorySetting(func(c *contract.MemoryConfig, v string) (err error) {
		if v == "" {
			// PHP's ini reader turns the bare words none, off, no, false
			// and null into "": ephpm.kv_compression = none arrives so.
			v = contract.CompressionName(false)
		}
		c.Compression, err = contract.ParseCompression(v)
		return err
	})},
	{"compression_min_size", memorySetting(func(c *contract.MemoryConfig, v string) error {
		n, err := parseSize(v, contract.MaxValueLen)
		c.CompressionMinSize = int(n)
		return err
	})},
	{"near_cache_prefixes", func(v string) error {
		near.Prefixes = nil
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				near.Prefixes = append(near.Prefixes, p)
			}
		}
		return nil
	}},
	{"near_cache_staleness_ms", func(v string) error {
		n, err := parseSize(v, math.MaxInt64/int64(time.Millisecond))
		near.Staleness = time.Duration(n) * time.Millisecond
		return err
	}},
	{"near_cache_size", func(v string) (err error) {
		near.MaxBytes, err = parseSize(v, math.MaxInt64)
		return err
	}},
	// The server API the host runs (PHP's sapi_module.name): what "auto"
	// chooses by.
	{"sapi", func(v string) error { sapi = v; return nil }},
	// Last: it opens the backend with the settings above.
	{"backend", openBackend},
}

var (
	// configMu serialises configure calls: the settings above are this
	// process's, written by whichever thread configures.
	configMu sync.Mutex
	// sapi is the "sapi" setting.
	sapi string
	// chosen says which store the table serves and why: stats' store.
	chosen atomic.Pointer[string]
)

func setChosen(s string) { chosen.Store(&s) }

// configure applies one setting of the configure member. A refused value
// changes nothing: every error but a backend that cannot be opened now is
// contract.ErrInvalidArgument.
func configure(name, value string) error {
	configMu.Lock()
	defer configMu.Unlock()
	for _, s := range settings {
		if s.name != name {
			continue
		}
		return s.apply(value)
	}
	return fmt.Errorf("%w: unknown setting %q", contract.ErrInvalidArgument, name)
}

// memorySetting applies a change of the memory setting to the in-process
// store, and to the shared-memory segment too while one is served (a
// segment is created with the in-process store's setting).
func memorySetting(set func(c *contract.MemoryConfig, value string) error) func(string) error {
	return func(value string) error {
		cfg := store.MemoryConfig()
		if err := set(&cfg, value); err != nil {
			return err
		}
		if err := store.Configure(cfg); err != nil {
			return err
		}
		if s, ok := current().(*shm.Store); ok {
			return s.SetMemoryConfig(store.MemoryConfig())
		}
		return nil
	}
}

// parseSize reads a count of bytes (or of milliseconds) as php.ini writes
// one: decimal digits, then optionally K, M or G (either case) for 2^10,
// 2^20 or 2^30; 0..max.
func parseSize(v string, max int64) (int64, error) {
	s := strings.TrimSpace(v)
	shift := 0
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			shift = 10
		case 'm', 'M':
			shift = 20
		case 'g', 'G':
			shift = 30
		}
	}
	if shift != 0 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > max>>shift {
		return 0, fmt.Errorf("%w: %q is not a number between 0 and %d (K, M and G suffixes allowed)",
			contract.ErrInvalidArgument, v, max)
	}
	return n << shift, nil
}

// openBackend applies the backend setting: "memory", "shm", "shm://NAME",
// a Redis URL, or "auto": a shared-memory segment where several processes
// serve requests, else the in-process store (see autoSegment).
func openBackend(value string) error {
	why := "ephpm.kv_backend"
	var anchor int
	if value == "auto" {
		name, a, reason := autoSegment(sapi)
		why, anchor, value = "default: "+reason, a, "memory"
		if name != "" {
			value = "shm://" + name
		}
	}
	if value == "memory" {
		SetBackend(backend.Memory{Store: store})
		setChosen("memory, this process's own (" + why + ")")
		return nil
	}
	if seg, ok := shmName(value); ok {
		s, err := shm.Open(seg, shm.Options{Memory: store.MemoryConfig(), Anchor: anchor,
			SessionDataPrefix: sessionRule.SessionDataPrefix, SessionLockPrefix: sessionRule.SessionLockPrefix,
			SessionLimitName: sessionRule.SessionLimitName})
		if err != nil && why != "ephpm.kv_backend" {
			// "auto" is valid whatever the segment it chose says (another
			// memory_limit, say): not E_INVALID, which the extension takes
			// from a library that does not know a default value.
			return errors.New(err.Error())
		}
		if err != nil {
			return err // a bad name is E_INVALID; a file that cannot be had now, E_UNAVAILABLE
		}
		SetBackend(s)
		setChosen("shm " + s.Path() + " (" + why + ")")
		return nil
	}
	r, err := redisstore.Open(value, redisOptions(near))
	if err != nil {
		return fmt.Errorf("%w: %v", contract.ErrInvalidArgument, err)
	}
	SetBackend(r)
	setChosen("redis (" + why + ")")
	return nil
}

// shmName returns the segment a backend setting names: "shm" is the
// segment "default", "shm://NAME" the segment NAME.
func shmName(value string) (string, bool) {
	if value == "shm" {
		return "default", true
	}
	return strings.CutPrefix(value, "shm://")
}
