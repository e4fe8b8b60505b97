--TEST--
session handler: a foreign lock with a 1 s TTL delays session_start() about 1 s, then it succeeds
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
--FILE--
<?php
var_dump(ephpm_kv_setnx('session_lock:s09', 'foreign', 1));
session_id('s09');
$t = hrtime(true);
var_dump(session_start());
$waited = (hrtime(true) - $t) / 1e9;
// Not before the TTL; ended by it, long before the 30 s wait budget
// (how soon after it the host ran this process is not asserted).
var_dump($waited > 0.9 && $waited < 15);
var_dump(ephpm_kv_get('session_lock:s09') !== 'foreign');
session_write_close();
?>
--EXPECT--
bool(true)
bool(true)
bool(true)
bool(true)
