// The lock commands: the two steps of a lock, each the store method PHP's
// function reaches, so that a lock raced over the wire and from PHP is
// decided in one place. (SET key token NX PX ttl takes a lock too: it is
// in cmd_strings.go with the rest of SET.)

package server

import "github.com/ephpm/ephpm/contract"

// setnx is SETNX key value: Backend.SetNX with no TTL, the step
// ephpm_kv_setnx takes; 1 when this call inserted the entry, 0 when one
// was there.
func (c *conn) setnx(key string, value []byte) {
	out, err := c.s.cfg.Store.SetNX(key, value, 0)
	if c.storeErr(err) {
		return
	}
	c.w.Int(boolInt(out == contract.Inserted))
}

// delIfEq is DELIFEQ key token: Backend.DelIfEq, the compare-and-delete ephpm_kv_del_if_eq
// releases a lock with; 1 when the entry held token and was deleted,
// else 0.
func (c *conn) delIfEq(key string, token []byte) {
	ok, err := c.s.cfg.Store.DelIfEq(key, token)
	if c.storeErr(err) {
		return
	}
	c.w.Int(boolInt(ok))
}
