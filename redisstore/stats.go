// Stats: the server's figures from INFO with this process's lock outcomes.

package redisstore

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ephpm/ephpm/contract"
)

// Stats combines the server's figures (INFO; in a Cluster, of the node
// that answers) with this process's lock outcomes.
func (s *Store) Stats() (contract.Stats, error) {
	info, err := s.c.Info(ctx, "server", "memory", "stats").Result()
	if err != nil {
		return contract.Stats{}, classify(err)
	}
	keys, err := s.c.DBSize(ctx).Result()
	if err != nil {
		return contract.Stats{}, classify(err)
	}
	field := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			field[k] = v
		}
	}
	num := func(k string) int64 { n, _ := strconv.ParseInt(field[k], 10, 64); return n }
	st := contract.Stats{
		InstanceID:        field["run_id"],
		Keys:              keys,
		BytesUsed:         num("used_memory"),
		MemoryLimit:       num("maxmemory"),
		Hits:              uint64(num("keyspace_hits")),
		Misses:            uint64(num("keyspace_misses")),
		Evictions:         uint64(num("evicted_keys")),
		Expirations:       uint64(num("expired_keys")),
		SetNXWins:         s.setNXWins.Load(),
		SetNXLosses:       s.setNXLosses.Load(),
		DelIfEqMatches:    s.delIfEqMatches.Load(),
		DelIfEqMismatches: s.delIfEqMismatches.Load(),
		Eviction:          field["maxmemory_policy"],
	}
	if st.Eviction == "" {
		// Older servers leave the policy out of INFO.
		if cfg, err := s.c.ConfigGet(ctx, "maxmemory-policy").Result(); err == nil {
			st.Eviction = cfg["maxmemory-policy"]
		}
	}
	name := field["server_name"] // Valkey's; Redis has none
	if name == "" {
		name = "redis"
	}
	st.Facts = fmt.Sprintf("%s %s (%s mode) at %s, up %s s; maxmemory-policy %s, maxmemory %s, used_memory %s",
		name, field["redis_version"], field["redis_mode"], s.where, field["uptime_in_seconds"],
		st.Eviction, orNone(field["maxmemory_human"]), field["used_memory_human"])
	if s.waitReplicas > 0 {
		st.Facts += fmt.Sprintf("; each write waits for %d replicas (wait_timeout %v), %d came back short",
			s.waitReplicas, s.waitTimeout, s.replicaShortfalls.Load())
	}
	return st, nil
}

func orNone(v string) string {
	if v == "" || v == "0B" {
		return "none"
	}
	return v
}
