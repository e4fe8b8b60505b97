--TEST--
session handler: with lazy_write, unchanged data refreshes the TTL without a write
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
session.lazy_write=1
session.gc_maxlifetime=3600
session.serialize_handler=php
--FILE--
<?php
session_id('s05');
session_start();
$_SESSION['x'] = 1;
session_write_close();

session_start();                          // reads x|i:1;
// Change the stored bytes behind PHP's back, with a TTL of 60 s: if close
// wrote, this would be overwritten with x|i:1; again.
ephpm_kv_set('session:s05', 'x|i:2;', 60);
session_write_close();                    // unchanged data: update_timestamp
var_dump(ephpm_kv_get('session:s05'));    // not rewritten
// The TTL was refreshed to gc_maxlifetime (an hour), past the 60 s we set:
// what is left of it shows that whatever this host's pace (waiting for a
// short TTL to run out would need the refresh to come before it did).
var_dump(ephpm_kv_ttl('session:s05') > 60);
?>
--EXPECT--
string(6) "x|i:2;"
bool(true)
