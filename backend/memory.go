package backend

import (
	"time"

	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/memstore"
)

// Memory serves a memstore.Store as a Backend. The store's reads and deletes
// cannot fail; its writes fail only with the errors memstore documents. Its
// Step is memstore.Store.Step: every Step in one step under the shard locks.
type Memory struct{ *memstore.Store }

func (m Memory) Name() string { return "memory" }

func (m Memory) GetInto(key string, dst []byte) (int, bool, error) {
	n, found := m.Store.GetInto(key, dst)
	return n, found, nil
}

func (m Memory) Del(key string) (bool, error) { return m.Store.Del(key), nil }

func (m Memory) DelIfEq(key string, token []byte) (bool, error) {
	return m.Store.DelIfEq(key, token), nil
}

func (m Memory) Wait(key string, timeout time.Duration) (bool, error) {
	return m.Store.Wait(key, timeout), nil
}

func (m Memory) Exists(key string) (bool, error) { return m.Store.Exists(key), nil }

func (m Memory) PTTL(key string) (time.Duration, bool, error) {
	ttl, found := m.Store.PTTL(key)
	return ttl, found, nil
}

func (m Memory) Flush() error { m.Store.Flush(); return nil }

func (m Memory) Stats() (contract.Stats, error) { return m.Store.Stats(), nil }

// Close does nothing: the in-process store lives as long as the process.
func (m Memory) Close() error { return nil }

// Scan walks the store (memstore.Store.Scan): every waiter and holder is this
// process's, so no entry names a holder process.
func (m Memory) Scan(prefix string, cursor uint64, count int, locksOnly bool) (ScanPage, error) {
	entries, next, err := m.Store.Scan(prefix, cursor, count, locksOnly)
	if err != nil {
		return ScanPage{}, err
	}
	page := ScanPage{Next: next, Keys: make([]KeyInfo, len(entries))}
	for i, e := range entries {
		page.Keys[i] = KeyInfo{Key: e.Key, Size: e.Size, TTL: e.TTL, Lock: e.Lock, Readers: e.Readers, Waiters: e.Waiters}
	}
	return page, nil
}
