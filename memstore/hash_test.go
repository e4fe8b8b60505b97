package memstore

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestKeysMeetingInOneStoreSpreadInAnother: keys chosen to meet in one
// shard of a store, and in one table probe start, spread over another
// store's shards: each store hashes with a seed of its own, so keys
// computed against one (or against any fixed hash) do not meet in another.
// Session ids hash by the sid, so they are checked as data keys.
func TestKeysMeetingInOneStoreSpreadInAnother(t *testing.T) {
	opts := Options{SweepInterval: -1, SessionDataPrefix: "session:", SessionLockPrefix: "session_lock:"}
	a, b := New(opts), New(opts)
	defer a.Close()
	defer b.Close()
	const n = 64
	var keys []string
	for i := 0; len(keys) < n; i++ {
		k := fmt.Sprintf("session:%032x", i)
		if sh, th, _ := a.locate(k); sh == &a.shards[0] && th&15 == 0 {
			keys = append(keys, k) // one shard of a, and one probe start in a table of up to 16 slots
		}
	}
	perShard := map[*shard]int{}
	for _, k := range keys {
		sh, _, _ := b.locate(k)
		perShard[sh]++
	}
	most := 0
	for _, c := range perShard {
		most = max(most, c)
	}
	assert.Greater(t, len(perShard), n/2, "distinct shards of the other store")
	assert.Less(t, most, 5, "keys in the other store's fullest shard")
}
