--TEST--
session handler: without the lock (readonly action) session_destroy() is refused like a write, and the session survives
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
ephpm.session_lock_wait=0.1
ephpm.session_lock_timeout_action=readonly
--FILE--
<?php
ephpm_kv_set('session:s16', 'v|s:4:"kept";');
ephpm_kv_setnx('session_lock:s16', 'foreign', 60);
session_id('s16');
set_error_handler(function ($no, $msg) { echo "warning: $msg\n"; return true; });
var_dump(session_start(), $_SESSION['v']);
var_dump(session_destroy());
restore_error_handler();
var_dump(ephpm_kv_get('session:s16'), ephpm_kv_get('session_lock:s16'));
?>
--EXPECTF--
warning: session_start(): ephpm: session s16: lock not acquired after waiting %f s, another request holds it; the session is read-only for this request (ephpm.session_lock_timeout_action=readonly)
bool(true)
string(4) "kept"
warning: session_destroy(): ephpm: session s16: not destroyed, this request does not hold the session lock
warning: session_destroy(): Session object destruction failed
bool(false)
string(13) "v|s:4:"kept";"
string(7) "foreign"
