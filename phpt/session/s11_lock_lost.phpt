--TEST--
session handler: a request whose lock expired and was taken by another cannot overwrite its session
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
session.lazy_write=0
ephpm.session_lock_ttl=1
--FILE--
<?php
session_id('s11');
session_start();
$_SESSION['by'] = 'A';
usleep(1_200_000);                                   // A overruns its lock TTL
// Request B takes the lock and writes its session.
var_dump(ephpm_kv_setnx('session_lock:s11', 'B-token', 30));
ephpm_kv_set('session:s11', 'by|s:1:"B";');
var_dump(session_write_close());                     // A's write is refused
var_dump(ephpm_kv_get('session:s11'));               // B's data intact
var_dump(ephpm_kv_get('session_lock:s11'));          // and B's lock too
?>
--EXPECTF--
bool(true)

Warning: session_write_close(): ephpm: session s11: not written, this request no longer holds the session lock (it expired after ephpm.session_lock_ttl=1 s, or the store lost it, and another request may hold it); the stored session is left as it is in %s on line %d

Warning: session_write_close(): Failed to write session data (ephpm). %s
bool(true)
string(11) "by|s:1:"B";"
string(7) "B-token"
