--TEST--
ephpm_kv_set/ephpm_kv_setnx: TTL expiry, and a set without TTL clears a TTL
--EXTENSIONS--
ephpm
--FILE--
<?php
$t = hrtime(true);
ephpm_kv_set('t3:ttl', 'short', 1);
ephpm_kv_set('t3:cleared', 'v', 1);
ephpm_kv_set('t3:cleared', 'v');          // no TTL any more
ephpm_kv_setnx('t3:lock', 'tok', 1);
ephpm_kv_set('t3:forever', 'v', 0);
$short = ephpm_kv_get('t3:ttl');
// Still there: the second has not passed, unless this host took most of it
// to get here (then it may be gone; how fast the host is is not asserted).
var_dump($short === 'short' || (hrtime(true) - $t) / 1e9 > 0.9);
usleep(1_100_000);
var_dump(ephpm_kv_get('t3:ttl'));
var_dump(ephpm_kv_get('t3:cleared'));
var_dump(ephpm_kv_get('t3:lock'));
var_dump(ephpm_kv_get('t3:forever'));
// An expired lock is free again.
var_dump(ephpm_kv_setnx('t3:lock', 'tok2', 30));
?>
--EXPECT--
bool(true)
NULL
string(1) "v"
NULL
string(1) "v"
bool(true)
