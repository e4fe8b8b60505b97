--TEST--
session handler: a foreign lock with a 1 s TTL delays session_start() about 1 s, then it succeeds
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
ephpm.session_lock_wait=300
--FILE--
<?php
$t = hrtime(true);                        // before the TTL starts
var_dump(ephpm_kv_setnx('session_lock:s09', 'foreign', 1));
session_id('s09');
var_dump(session_start());
$waited = (hrtime(true) - $t) / 1e9;
// Not before the TTL; ended by it (true, with no warning), not by the wait
// budget of 300 s, a hang catch (how soon after the TTL the host ran this
// process is not asserted).
var_dump($waited > 0.9 && $waited < 300);
var_dump(ephpm_kv_get('session_lock:s09') !== 'foreign');
session_write_close();
?>
--EXPECT--
bool(true)
bool(true)
bool(true)
bool(true)
