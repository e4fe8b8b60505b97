// SCAN: the walk of the store, one page a call.

package server

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ephpm/ephpm/contract"
)

// scan is SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]: one page of
// Scanner.Scan, filtered by MATCH as Redis filters (after the walk: a
// page may be empty with the walk not done). Every value here is a
// string: another TYPE matches nothing. A page that skipped a damaged
// part of the store (a corrupt shard) is answered with an error naming it
// and the cursor the walk goes on from: a Redis client takes a SCAN
// reply for the store's content, and would take the walk's end for "no
// more keys" where a shard's keys were never read.
func (c *conn) scan(args [][]byte) {
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		c.w.Error("ERR invalid cursor")
		return
	}
	count := 10
	var pattern []byte
	onlyStrings := true
	var ob [16]byte
	for i := 2; i < len(args); i += 2 {
		if i+1 == len(args) {
			c.w.Error(errSyntax)
			return
		}
		switch string(lower(ob[:], args[i])) {
		case "match":
			pattern = args[i+1]
		case "count":
			n, err := strconv.Atoi(string(args[i+1]))
			if err != nil {
				c.w.Error(errNotInteger)
				return
			}
			if n < 1 {
				c.w.Error(errSyntax)
				return
			}
			count = min(n, 100000)
		case "type":
			onlyStrings = string(lower(ob[:], args[i+1])) == "string"
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	page, err := c.s.cfg.Store.Scan(literalPrefix(pattern), cursor, count, false)
	if errors.Is(err, contract.ErrInvalidArgument) {
		c.w.Error("ERR invalid cursor")
		return
	}
	if c.storeErr(err) {
		return
	}
	if len(page.Skipped) > 0 {
		for _, why := range page.Skipped {
			c.s.logf("SCAN skipped: %s", why)
		}
		c.w.Error(fmt.Sprintf("ERR SCAN could not read part of the store: %s (the walk goes on from cursor %d without it)",
			oneLine(strings.Join(page.Skipped, "; ")), page.Next))
		return
	}
	keys := page.Keys[:0]
	for _, k := range page.Keys {
		if onlyStrings && (pattern == nil || Match(pattern, []byte(k.Key))) {
			keys = append(keys, k)
		}
	}
	c.w.Array(2)
	c.w.BulkString(strconv.FormatUint(page.Next, 10))
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.BulkString(k.Key)
	}
}
