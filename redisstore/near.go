package redisstore

import (
	"time"

	"github.com/dgraph-io/ristretto/v2"
)

// NearCache configures the optional per-process cache in front of Redis
// for read-mostly keys: a read of a key under one of Prefixes may be served
// from this process's memory for up to Staleness after it was fetched,
// saving a round trip. Writes through this process invalidate the entry;
// writes by other processes show within Staleness. Session keys are never
// cached, whatever the prefixes; keys used as locks must not be listed.
type NearCache struct {
	Prefixes  []string
	Staleness time.Duration
	MaxBytes  int64
}

// near is the cache itself; nil when off. ristretto suits it: bounded
// memory, admission by frequency, and concurrent reads without a global
// lock. Its sets may be dropped or delayed, which costs only a round trip
// here, and is why it stands nowhere on the lock path.
type near struct {
	cfg    NearCache
	pinned []string // prefixes never cached (Options.Pinned)
	c      *ristretto.Cache[string, nearEntry]
}

type nearEntry struct {
	v  []byte
	at time.Time
}

func newNear(cfg NearCache, pinned []string) (*near, error) {
	if len(cfg.Prefixes) == 0 || cfg.Staleness <= 0 || cfg.MaxBytes <= 0 {
		return nil, nil
	}
	c, err := ristretto.NewCache(&ristretto.Config[string, nearEntry]{
		NumCounters: max(1000, cfg.MaxBytes/100), // ~10x the entries expected at 1 KiB each
		MaxCost:     cfg.MaxBytes,
		BufferItems: 64,
	})
	if err != nil {
		return nil, err
	}
	return &near{cfg: cfg, pinned: pinned, c: c}, nil
}

// eligible says whether key may be served from the cache.
func (n *near) eligible(key string) bool {
	return n != nil && !hasPrefix(key, n.pinned) && hasPrefix(key, n.cfg.Prefixes)
}

func (n *near) get(key string) ([]byte, bool) {
	if !n.eligible(key) {
		return nil, false
	}
	e, ok := n.c.Get(key)
	if !ok || time.Since(e.at) >= n.cfg.Staleness {
		return nil, false
	}
	return e.v, true
}

func (n *near) put(key string, v []byte, fetchedAt time.Time) {
	if n.eligible(key) {
		n.c.SetWithTTL(key, nearEntry{v: v, at: fetchedAt}, int64(len(v))+64, n.cfg.Staleness)
	}
}

// forget drops key after a write through this process.
func (n *near) forget(key string) {
	if n.eligible(key) {
		n.c.Del(key)
	}
}

func (n *near) clear() {
	if n != nil {
		n.c.Clear()
	}
}

func (n *near) close() {
	if n != nil {
		n.c.Close()
	}
}
