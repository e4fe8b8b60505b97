--TEST--
session handler: session_destroy() removes the data and releases the lock
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
--FILE--
<?php
session_id('s03');
session_start();
$_SESSION['x'] = 1;
session_write_close();
session_start();
var_dump(ephpm_kv_get('session_lock:s03') !== null);
var_dump(session_destroy());
var_dump(ephpm_kv_get('session:s03'), ephpm_kv_get('session_lock:s03'));
// Destroying a session that has no data is fine too.
session_id('s03none');
session_start();
var_dump(session_destroy());
?>
--EXPECT--
bool(true)
bool(true)
NULL
NULL
bool(true)
