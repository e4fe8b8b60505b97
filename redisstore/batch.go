package redisstore

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ephpm/ephpm/backend"
)

// GetMany sends one GET per key in one pipeline: go-redis sends it to a
// standalone server (or the Sentinel's master) in one round trip, and in a
// Cluster splits it by the node that owns each key's slot, one round trip
// per node, the nodes in parallel. Each GET is atomic on its own; the batch
// is no snapshot. Keys under a near-cache prefix may come from this
// process's cache, as GetInto's do.
func (s *Store) GetMany(keys []string, dst []byte) (int, error) {
	cmds := make([]*redis.StringCmd, len(keys))
	cached := make([][]byte, len(keys))
	var fetchedAt time.Time
	pipe := s.c.Pipeline()
	for i, k := range keys {
		if err := s.durable(k); err != nil {
			return 0, err
		}
		if v, ok := s.near.get(k); ok {
			cached[i] = v
			continue
		}
		if s.near.eligible(k) && fetchedAt.IsZero() {
			fetchedAt = time.Now()
		}
		cmds[i] = pipe.Get(ctx, s.redisKey(k))
	}
	if pipe.Len() > 0 {
		// Exec's error is that of the first failed command, which may be a
		// redis.Nil; each command is read below.
		pipe.Exec(ctx)
	}
	n := 0
	for i, k := range keys {
		if cmds[i] == nil {
			n = backend.PutRecord(dst, n, cached[i], true)
			continue
		}
		v, err := cmds[i].Bytes()
		if errors.Is(err, redis.Nil) {
			n = backend.PutRecord(dst, n, nil, false)
			continue
		}
		if err != nil {
			return 0, classify(err)
		}
		if s.near.eligible(k) {
			s.near.put(k, bytes.Clone(v), fetchedAt)
		}
		n = backend.PutRecord(dst, n, v, true)
	}
	return n, nil
}

// SetMany sends one SET (with PX when ttl > 0) per entry in one pipeline,
// split by node in a Cluster as GetMany's is, and never sent twice (every
// command is sendOnce, so go-redis retries no part of the pipeline: a
// repeated SET could overwrite a newer value of another client). Each SET
// is atomic on its own. The whole batch is sent before any reply is read,
// so after the first failure the later entries may have been written: the
// count returned is that of the entries before the first failure.
func (s *Store) SetMany(keys []string, values [][]byte, ttl time.Duration) (int, error) {
	if err := backend.CheckBatch(keys, values, ttl); err != nil {
		return 0, err
	}
	for _, k := range keys {
		if err := s.durable(k); err != nil {
			return 0, err
		}
	}
	defer func() {
		for _, k := range keys {
			s.near.forget(k)
		}
	}()
	cmds := make([]*redis.Cmd, len(keys))
	pipe := s.c.Pipeline()
	for i, k := range keys {
		args := []any{"set", s.redisKey(k), values[i]}
		if ttl > 0 {
			args = append(args, "px", ms(ttl))
		}
		cmds[i] = redis.NewCmd(ctx, args...)
		pipe.Process(ctx, sendOnce{cmds[i]})
	}
	var wait *redis.IntCmd
	if s.waitReplicas > 0 && len(cmds) > 0 {
		// The same connection (not a Cluster: replicas.go) after the sets.
		wait = redis.NewIntCmd(ctx, "wait", s.waitReplicas, s.waitTimeout.Milliseconds())
		pipe.Process(ctx, wait)
	}
	if len(cmds) > 0 {
		pipe.Exec(ctx)
	}
	for i, k := range keys {
		if err := cmds[i].Err(); err != nil {
			return i, fmt.Errorf("key %q: %w", k, classify(err))
		}
	}
	if wait != nil {
		if err := s.acked(wait.Result()); err != nil {
			return 0, err // done on the master, none known to survive a failover
		}
	}
	return len(keys), nil
}
