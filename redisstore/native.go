package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// native is the set of the store's compare-and-set commands a server has
// built in, which replace the scripts where it has them: one command the
// server parses and runs, with no script to look up or interpret, and no
// SCRIPT or EVAL that a managed or proxied server may refuse.
type native uint8

const (
	delIfEqCmd native = 1 << iota // DELIFEQ key token: Valkey 9.0 and later
	delExCmd                      // DELEX key IFEQ token: Redis 8.4 and later
	setIfEqCmd                    // SET key value IFEQ token [PX ms]: Valkey 8.1, Redis 8.4 and later

	releaseCmds = delIfEqCmd | delExCmd
)

// nativeOf reads what a server has from its INFO server text. Valkey says
// server_name:valkey and gives its own version in valkey_version (its
// redis_version is that of the Redis it is compatible with); Redis gives
// redis_version and no server_name. Any other server, and a text without
// a version, gets the scripts.
func nativeOf(info string) native {
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	switch fields["server_name"] {
	case "valkey":
		v := version(fields["valkey_version"])
		switch {
		case v >= 9_000:
			return delIfEqCmd | setIfEqCmd // and DELEX from 9.2: one release command is enough
		case v >= 8_001:
			return setIfEqCmd
		}
	case "":
		if version(fields["redis_version"]) >= 8_004 {
			return delExCmd | setIfEqCmd
		}
	}
	return 0
}

// version is major*1000 + minor of "major.minor.patch", or 0.
func version(s string) int {
	major, rest, _ := strings.Cut(s, ".")
	minor, _, _ := strings.Cut(rest, ".")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil || ma < 0 || mi < 0 || mi >= 1000 {
		return 0
	}
	return ma*1000 + mi
}

// release is DelIfEq's command on a server that has n, or nil. Like the
// script, it deletes only a live key holding exactly token (an empty
// token matches an empty value), answers 1 or 0, and fails WRONGTYPE on a
// key that is not a string.
func (n native) release(rk string, token []byte) []any {
	switch {
	case n&delIfEqCmd != 0:
		return []any{"delifeq", rk, token}
	case n&delExCmd != 0:
		return []any{"delex", rk, "ifeq", token}
	}
	return nil
}

// refresh is ExpireIfEq's command on a server that has n, or nil: SET of
// the value the key already holds, only while it holds it, with the new
// TTL; without PX, SET clears the TTL, which is what a TTL of 0 (none)
// asks for. A negative TTL has no SET form (PX refuses it) and keeps the
// script. It answers OK or nil, and fails WRONGTYPE as the script does.
func (n native) refresh(rk string, token []byte, ttlMS int64) []any {
	switch {
	case n&setIfEqCmd == 0 || ttlMS < 0:
		return nil
	case ttlMS == 0:
		return []any{"set", rk, token, "ifeq", token}
	}
	return []any{"set", rk, token, "ifeq", token, "px", ttlMS}
}

// nativeCall is a member's native form, for a member that also has a
// script (which runs wherever the form is nil or refused unrun).
type nativeCall struct {
	form func(have native) []any // the command for a server that has have; nil: the script
	uses native                  // what form relies on: dropped for a connection that does not know it
	// then, if set, is sent after the command in the same write, and its
	// reply read and dropped: the release's PUBLISH, which the native
	// commands do not do themselves.
	then []any
}

// errScript: the member's native form did not run; its script must.
var errScript = errors.New("redisstore: no native command here")

// unrun reports whether the server refused a native command before
// running it, so that the script may run instead: an unknown command (a
// server older than its version said, a renamed command) or one the user
// may not run (NOPERM: ACLs are checked before a command runs) has had
// no effect, and forget says to stop sending it on this connection; OOM
// (a full noeviction server refuses every SET, but a script's PEXPIRE
// runs) has had none either. Any other error is the member's outcome.
func unrun(err error) (script, forget bool) {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return false, false
	}
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "ERR unknown command"), strings.HasPrefix(msg, "NOPERM"):
		return true, true
	case strings.HasPrefix(msg, "OOM "):
		return true, false
	}
	return false, false
}

// nativeReply maps a native command's reply to the script's: 1 done, 0
// not (DELIFEQ and DELEX answer 1 or 0; SET IFEQ answers OK or nil).
func nativeReply(r reply) (int64, error) {
	switch {
	case r.kind == ':' && (r.n == 0 || r.n == 1):
		return r.n, nil
	case r.kind == '+':
		return 1, nil
	case r.kind == '$' && r.null:
		return 0, nil
	}
	return 0, errProtocol
}

// nativeHook serves nativeCmds on one go-redis client (a Cluster node's,
// or the Sentinel master's): it learns what the server has from INFO
// server once per generation of connections (each new connection makes it
// learn again: a restart or failover may bring another version, and a
// Cluster in a rolling upgrade mixes them), and sends the native form,
// else lets the script through.
type nativeHook struct {
	c    *redis.Client
	have atomic.Int32 // a native set, or -1: not learned since the last new connection
}

func newNativeHook() *nativeHook {
	h := &nativeHook{}
	h.have.Store(-1)
	return h
}

// onConnect is prev that also makes h learn again: for the OnConnect of
// the client h serves.
func (h *nativeHook) onConnect(prev func(context.Context, *redis.Conn) error) func(context.Context, *redis.Conn) error {
	return func(ctx context.Context, cn *redis.Conn) error {
		h.have.Store(-1)
		if prev != nil {
			return prev(ctx, cn)
		}
		return nil
	}
}

// attach makes h serve c, whose OnConnect is h.onConnect's.
func (h *nativeHook) attach(c *redis.Client) *redis.Client {
	h.c = c
	c.AddHook(h)
	return c
}

// nativeCmd is a member's script (EVALSHA) carrying its native form: a
// nativeHook on the client that the command reaches (in a Cluster, the
// node that owns the key) sends the form instead where the server has it.
// Without a hook (an ASK redirect goes as a pipeline, which passes no
// process hook) the script runs, which is always correct.
type nativeCmd struct {
	*redis.Cmd
	call *nativeCall
}

func (nativeCmd) NoRetry() bool { return true }

func (h *nativeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *nativeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *nativeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		nc, ok := cmd.(nativeCmd)
		if !ok {
			return next(ctx, cmd)
		}
		have := h.have.Load()
		if have < 0 {
			info, err := h.c.Info(ctx, "server").Result()
			switch {
			case refused(err):
				info = ""
			case err != nil:
				return err // nothing of the member was sent
			}
			have = int32(nativeOf(info))
			h.have.Store(have)
		}
		form := nc.call.form(native(have))
		if form == nil {
			return next(ctx, cmd)
		}
		first := redis.NewCmd(ctx, form...)
		pipe := h.c.Pipeline()
		pipe.Process(ctx, first)
		if nc.call.then != nil {
			pipe.Process(ctx, redis.NewCmd(ctx, nc.call.then...))
		}
		pipe.Exec(ctx) // first's own error is what counts, below
		v, err := first.Result()
		if script, forget := unrun(err); script {
			if forget {
				h.have.CompareAndSwap(have, have&^int32(nc.call.uses))
			}
			return next(ctx, cmd)
		}
		var r reply
		switch v := v.(type) {
		case int64:
			r = reply{kind: ':', n: v}
		case string:
			r = reply{kind: '+'}
		}
		if errors.Is(err, redis.Nil) {
			r, err = reply{kind: '$', null: true}, nil
		}
		if err != nil {
			return err // MOVED and ASK included: the Cluster client follows them
		}
		n, err := nativeReply(r)
		if err != nil {
			return err
		}
		nc.SetVal(n)
		return nil
	}
}
