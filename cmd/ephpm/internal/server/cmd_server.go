// The server commands: INFO, DBSIZE, COMMAND, CONFIG. They describe the
// server and the store; none changes anything.

package server

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// info answers INFO [section ...]: Redis's sections that mean something
// here, from the store's stats, and ephpm's own.
func (c *conn) info(sections [][]byte) {
	st, err := c.s.cfg.Store.Stats()
	if c.storeErr(err) {
		return
	}
	want := map[string]bool{}
	for _, s := range sections {
		want[strings.ToLower(string(s))] = true
	}
	all := len(want) == 0 || want["all"] || want["default"] || want["everything"]
	var b strings.Builder
	section := func(name string, lines ...string) {
		if !all && !want[strings.ToLower(name)] {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
		for _, l := range lines {
			b.WriteString(l + "\r\n")
		}
	}
	kv := func(k string, v any) string { return fmt.Sprintf("%s:%v", k, v) }
	up := time.Since(c.s.started)
	section("Server", kv("redis_version", redisVersion), kv("server_name", "ephpm"), kv("redis_mode", "standalone"),
		kv("process_id", os.Getpid()), kv("uptime_in_seconds", int64(up.Seconds())), kv("uptime_in_days", int64(up.Hours()/24)))
	section("Clients", kv("connected_clients", c.s.clients.Load()), kv("maxclients", c.s.cfg.MaxClients))
	section("Memory", kv("used_memory", st.BytesUsed), kv("maxmemory", st.MemoryLimit), kv("maxmemory_policy", st.Eviction))
	section("Stats", kv("total_connections_received", c.s.conns.Load()), kv("total_commands_processed", c.s.commands.Load()),
		kv("rejected_connections", c.s.rejected.Load()),
		kv("keyspace_hits", st.Hits), kv("keyspace_misses", st.Misses), kv("expired_keys", st.Expirations), kv("evicted_keys", st.Evictions))
	section("Ephpm", kv("store", c.s.cfg.Describe), kv("backend", c.s.cfg.Store.Name()), kv("instance_id", st.InstanceID),
		kv("processes_attached", st.Processes), kv("session_bytes", st.SessionBytes), kv("session_limit", st.SessionLimit),
		kv("compression", st.Compression), kv("sets", st.Sets), kv("set_nx_wins", st.SetNXWins), kv("set_nx_losses", st.SetNXLosses),
		kv("del_if_eq_matches", st.DelIfEqMatches), kv("del_if_eq_mismatches", st.DelIfEqMismatches))
	section("Keyspace", fmt.Sprintf("db0:keys=%d,expires=0,avg_ttl=0", st.Keys))
	c.w.Verbatim(b.String())
}

// dbsize is DBSIZE: the store's count of keys, as Backend.Stats gives it.
func (c *conn) dbsize() {
	stats, err := c.s.cfg.Store.Stats()
	if c.storeErr(err) {
		return
	}
	c.w.Int(stats.Keys)
}

// command is COMMAND [COUNT]: there is no command table to describe, so
// an empty one (redis-cli asks for it in interactive mode and does
// without); COUNT is the number of commands served.
func (c *conn) command(args [][]byte) {
	var sb [16]byte
	if len(args) > 1 && string(lower(sb[:], args[1])) == "count" {
		c.w.Int(int64(len(arity)))
	} else {
		c.w.Array(0)
	}
}

// config is CONFIG GET, answered with an empty map: no setting of
// Redis's is one here (redis-benchmark asks). Any other subcommand is
// refused.
func (c *conn) config(args [][]byte) {
	var sb [16]byte
	if string(lower(sb[:], args[1])) == "get" {
		c.w.Map(0)
	} else {
		c.w.Error("ERR unknown subcommand '" + cleanArg(args[1]) + "'. Try CONFIG HELP.")
	}
}
