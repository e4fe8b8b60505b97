// Sending commands and scripts: do sends one command, run and its variants
// one script (by its SHA1, or native where the server has the command
// built in), and classify turns a server's refusal into the store's
// errors.

package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ephpm/ephpm/contract"
)

// ms is a TTL in whole milliseconds, as PX and PEXPIRE take it: 0 for
// none, and at least 1 for any positive TTL (0 would mean none, or be
// refused).
func ms(d time.Duration) int64 {
	if d > 0 {
		return max(int64(d/time.Millisecond), 1)
	}
	return int64(d / time.Millisecond)
}

var ctx = context.Background()

// do runs one command whose arguments are strings, []byte or int64, and
// whose reply is a status, an integer or a bulk string (copied into dst
// when it fits: see reply). A server's refusal is an error carrying its
// text; any other error is an unknown outcome. With wait_replicas, a
// command that writes also waits for the replicas (doAcked).
func (s *Store) do(dst []byte, args ...any) (reply, error) {
	if s.waits(args) {
		return s.doAcked(dst, args)
	}
	if s.direct != nil {
		return s.direct.do(dst, args)
	}
	pause, paused := slotMovePause, time.Duration(0)
	for {
		cmd := redis.NewCmd(ctx, args...)
		s.c.Process(ctx, sendOnce{cmd})
		if err := cmd.Err(); err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") || paused >= s.slotMoveWait {
			return goRedisReply(dst, cmd)
		}
		// A command of several keys in a slot that is moving between two
		// Cluster masters, some of its keys moved and some not yet: the
		// server refused it unrun, so sending it again is safe, once the
		// keys are together (on the slot's new master, which an ASK or
		// MOVED then names).
		time.Sleep(pause)
		paused += pause
		pause = min(2*pause, slotMovePauseMax)
	}
}

// slotMovePause and slotMovePauseMax: the first pause before a command
// refused with TRYAGAIN is sent again, doubled up to the second. A slot's
// keys move in batches of a few each (redis-cli --cluster reshard), which
// takes milliseconds; the pauses go on for at most the read timeout
// (Store.slotMoveWait), after which the TRYAGAIN is the call's error.
const (
	slotMovePause    = 2 * time.Millisecond
	slotMovePauseMax = 50 * time.Millisecond
)

// goRedisReply is cmd's reply as do returns it.
func goRedisReply(dst []byte, cmd *redis.Cmd) (reply, error) {
	v, err := cmd.Result()
	switch {
	case errors.Is(err, redis.Nil):
		return reply{kind: '$', null: true}, nil
	case err != nil:
		return reply{}, err
	}
	switch v := v.(type) {
	case int64:
		return reply{kind: ':', n: v}, nil
	case string: // a status or a bulk string: go-redis does not tell them apart
		if len(v) <= len(dst) {
			return reply{kind: '$', b: dst[:copy(dst, v)]}, nil
		}
		return reply{kind: '$', b: []byte(v)}, nil
	}
	return reply{}, errProtocol
}

// sendOnce marks a command go-redis must not send again after an error.
// MaxRetries is off (see parse), but a ClusterClient also retries a
// command whose reply was lost (a cut connection, a timeout) up to
// MaxRedirects times, and MaxRedirects also follows MOVED and ASK, which
// must stay; a NoRetry command is never retried
// (TestClusterSendsACommandOnce).
type sendOnce struct{ *redis.Cmd }

func (sendOnce) NoRetry() bool { return true }

// script is a Lua script, run by its SHA1 and sent whole only when the
// server does not have it yet.
type script struct{ src, sha string }

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

// run is EVALSHA, then EVAL if the server answers NOSCRIPT (it ran
// nothing). The script's reply must be an integer.
func (s *Store) run(sc *script, keys []string, argv ...any) (int64, error) {
	return s.runNative(nil, sc, keys, argv...)
}

// runNative is call's native command on a server that has it (see
// nativeCall), else run. On the direct path the store picks the form for
// the connection it takes; through go-redis the script goes out as a
// nativeCmd and the hook of the client it reaches (in a Cluster, the
// owner's node) picks it.
func (s *Store) runNative(call *nativeCall, sc *script, keys []string, argv ...any) (int64, error) {
	if s.scriptsOnly {
		call = nil
	}
	if call != nil && s.direct != nil {
		r, err := s.direct.doNative(call)
		if err != errScript {
			if err != nil {
				return 0, classify(err)
			}
			n, err := nativeReply(r)
			return n, err
		}
	}
	var r reply
	var err error
	if call != nil && s.direct == nil {
		args := evalArgs(sc, keys, argv)
		cmd := redis.NewCmd(ctx, args...)
		s.c.Process(ctx, nativeCmd{cmd, call})
		r, err = goRedisReply(nil, cmd)
		if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			args[0], args[1] = "eval", sc.src
			r, err = s.do(nil, args...)
		}
		err = classify(err)
	} else {
		r, err = s.runInto(nil, sc, keys, argv...)
	}
	if err == nil && r.kind != ':' {
		err = errProtocol // these scripts return integers
	}
	return r.n, err
}

// evalArgs is EVALSHA of sc with keys and argv.
func evalArgs(sc *script, keys []string, argv []any) []any {
	args := make([]any, 0, 3+len(keys)+len(argv))
	args = append(args, "evalsha", sc.sha, int64(len(keys)))
	for _, k := range keys {
		args = append(args, k)
	}
	return append(args, argv...)
}

// runInto is run for a script whose reply may also be a bulk string,
// copied into dst when it fits (as do copies it).
func (s *Store) runInto(dst []byte, sc *script, keys []string, argv ...any) (reply, error) {
	args := evalArgs(sc, keys, argv)
	r, err := s.do(dst, args...)
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		args[0], args[1] = "eval", sc.src
		r, err = s.do(dst, args...)
	}
	return r, classify(err)
}

// classify turns a Redis error into the store's errors: a refusal whose
// outcome is known (nothing changed) or, for everything else, the error
// itself, which the bridge reports as an unknown outcome.
func classify(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "OOM "):
		return fmt.Errorf("%w: %s", contract.ErrNoMemory, msg)
	case strings.Contains(msg, "overflow"):
		return fmt.Errorf("%w: %s", contract.ErrOverflow, msg)
	case strings.Contains(msg, "not an integer"):
		return fmt.Errorf("%w: %s", contract.ErrNotInteger, msg)
	}
	return err
}
