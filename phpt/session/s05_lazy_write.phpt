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
session.gc_maxlifetime=2
session.serialize_handler=php
--FILE--
<?php
session_id('s05');
session_start();
$_SESSION['x'] = 1;
session_write_close();
usleep(1_500_000);

session_start();                          // reads x|i:1;
// Change the stored bytes behind PHP's back (same TTL): if close wrote, this
// would be overwritten with x|i:1; again.
ephpm_kv_set('session:s05', 'x|i:2;', 1);
session_write_close();                    // unchanged data: update_timestamp
var_dump(ephpm_kv_get('session:s05'));    // not rewritten
usleep(1_200_000);                        // past the 1 s we set: the TTL was refreshed to 2 s
var_dump(ephpm_kv_get('session:s05'));
?>
--EXPECT--
string(6) "x|i:2;"
string(6) "x|i:2;"
