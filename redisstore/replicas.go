// Replica waits: with wait_replicas=N every write the store sends is
// followed, on the same connection, by WAIT N wait_timeout, and a write
// that fewer than N replicas acknowledged in time is an error.

package redisstore

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Why: Redis replicates asynchronously. A master acknowledges a lock's
// grant before any replica has it, and if it dies before its replication
// stream left it, the replica Sentinel promotes has never heard of the
// grant: a second process is granted the same lock (docs/measurements.md,
// "Locks across a Sentinel failover": 2 rounds in 50 on one host, every
// round with a replica that lags). WAIT returns once N replicas have
// acknowledged every write the connection sent before it, or at its
// timeout with how many did; a write acknowledged by N replicas survives
// the failover to any of them.
//
// What waits: every command the store sends but the pure reads (GET, PTTL,
// EXISTS, INFO): lock grants and their fences, releases, guarded and
// fenced writes, refreshes, lease renewals, and plain writes. A write
// whose WAIT came back short was done on the master and may or may not
// survive a failover: the call fails with an error, which the bridge
// reports as an unknown outcome (E_UNAVAILABLE), never as a plausible
// answer. The members go as their scripts (no native forms), so that each
// is one command that WAIT follows. Not on a Cluster URL: there WAIT must
// follow the write on the connection to the key's master, which the
// Cluster client does not lend.

// DefaultWaitTimeout is WAIT's timeout when the URL sets wait_replicas and
// no wait_timeout.
const DefaultWaitTimeout = time.Second

// defaultReadTimeout is go-redis's read timeout when the URL sets none.
const defaultReadTimeout = 5 * time.Second

// parseWaitReplicas reads (and removes from q) wait_replicas and
// wait_timeout.
func parseWaitReplicas(q url.Values) (int64, time.Duration, error) {
	var n int64
	timeout := DefaultWaitTimeout
	if q.Has("wait_replicas") {
		v, err := strconv.ParseInt(q.Get("wait_replicas"), 10, 32)
		if err != nil || v < 0 {
			return 0, 0, errors.New("wait_replicas is how many replicas must acknowledge each write: 0 (none) or more")
		}
		n = v
		q.Del("wait_replicas")
	}
	if q.Has("wait_timeout") {
		d, err := time.ParseDuration(q.Get("wait_timeout"))
		if err != nil || d < time.Millisecond {
			return 0, 0, errors.New("wait_timeout is a duration of at least 1ms (such as 500ms)")
		}
		if n == 0 {
			return 0, 0, errors.New("wait_timeout needs wait_replicas")
		}
		timeout = d
		q.Del("wait_timeout")
	}
	return n, timeout, nil
}

// checkWaitReplicas refuses waits where they cannot be kept: on a Cluster
// URL, and with a wait_timeout that the connection's read timeout would
// cut short (readTimeout 0: go-redis's default).
func checkWaitReplicas(mode Mode, n int64, timeout, readTimeout time.Duration) error {
	if n == 0 {
		return nil
	}
	if mode == Cluster {
		return errors.New("wait_replicas is for a standalone or Sentinel URL: on a Cluster, WAIT must follow each write " +
			"on the connection to its key's master, which the Cluster client does not lend")
	}
	if readTimeout == 0 {
		readTimeout = defaultReadTimeout
	}
	if timeout >= readTimeout {
		return fmt.Errorf("wait_timeout (%v) must be shorter than read_timeout (%v), which would cut the wait short", timeout, readTimeout)
	}
	return nil
}

// waits reports whether the command args must wait for replicas: every
// command but the pure reads, when the store waits.
func (s *Store) waits(args []any) bool {
	if s.waitReplicas == 0 {
		return false
	}
	name, _ := args[0].(string)
	switch strings.ToLower(name) {
	case "get", "pttl", "exists", "info":
		return false
	}
	return true
}

// doAcked is do for a command that waits for replicas: the command, then
// WAIT on the same connection. The command's own error (a refusal: nothing
// was written; or an unknown outcome) comes first; then a WAIT that failed
// or came back short is an error of its own: the write was done and may
// not survive a failover.
func (s *Store) doAcked(dst []byte, args []any) (reply, error) {
	var r reply
	var err, waitErr error
	var acked int64
	if s.direct != nil {
		r, err, acked, waitErr = s.direct.doThenWait(dst, args, s.waitReplicas, s.waitTimeout)
	} else {
		cmd := redis.NewCmd(ctx, args...)
		wait := redis.NewIntCmd(ctx, "wait", s.waitReplicas, s.waitTimeout.Milliseconds())
		pipe := s.c.Pipeline()
		pipe.Process(ctx, cmd)
		pipe.Process(ctx, wait)
		pipe.Exec(ctx) // each command's own result counts, below
		r, err = goRedisReply(dst, cmd)
		acked, waitErr = wait.Result()
	}
	if err != nil {
		return r, err
	}
	if err := s.acked(acked, waitErr); err != nil {
		return reply{}, err
	}
	return r, nil
}

// acked is the error of a write whose WAIT answered n (or failed with
// err): nil if n reaches wait_replicas.
func (s *Store) acked(n int64, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("the write was done, but WAIT for its replicas failed: %w", err)
	case n < s.waitReplicas:
		s.replicaShortfalls.Add(1)
		return fmt.Errorf("%w: %d of the %d replicas wait_replicas asks for acknowledged the write within wait_timeout (%v); "+
			"a failover now may lose it", errReplicasShort, n, s.waitReplicas, s.waitTimeout)
	}
	return nil
}

// errReplicasShort: a write done on the master that fewer replicas than
// wait_replicas acknowledged in time.
var errReplicasShort = errors.New("redis: replicas did not acknowledge")

// doThenWait is do followed, on the same connection, by WAIT n timeout,
// whose reply may take up to timeout more than the read timeout allows
// (a server's error reply to args: no WAIT is sent).
func (d *direct) doThenWait(dst []byte, args []any, n int64, timeout time.Duration) (r reply, err error, acked int64, waitErr error) {
	c, err := d.get()
	if err != nil {
		return reply{}, err, 0, nil
	}
	now := monoBase.Add(time.Since(monoBase))
	r, err = c.roundTrip(dst, deadline(now, d.writeTimeout), deadline(now, d.readTimeout), args)
	var refused redisError
	if err != nil {
		d.put(c, errors.As(err, &refused))
		return r, err, 0, nil
	}
	now = monoBase.Add(time.Since(monoBase))
	w, waitErr := c.roundTrip(nil, deadline(now, d.writeTimeout), deadline(now.Add(timeout), d.readTimeout),
		[]any{"wait", n, timeout.Milliseconds()})
	d.put(c, waitErr == nil || errors.As(waitErr, &refused))
	if waitErr == nil && w.kind != ':' {
		waitErr = errProtocol
	}
	return r, nil, w.n, waitErr
}
