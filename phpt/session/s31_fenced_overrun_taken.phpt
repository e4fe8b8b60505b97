--TEST--
session handler: a request whose lock expired and was granted to another (a fenced grant, as the handler's) cannot write, empty or destroy its session; the other's data and lock stay
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
foreach (['write', 'empty', 'destroy'] as $how) {
    $sid = "s31$how";
    session_id($sid);
    session_start();
    $_SESSION['by'] = 'A';
    if ($how === 'empty') {
        $_SESSION = [];
    }
    usleep(1_200_000);                                   // A overruns its lock TTL
    // Request B is granted the lock as the handler is (a fenced grant) and
    // writes its session under it.
    $t = ephpm_kv_lock("session_lock:$sid", 30, 0.0, null, $fence);
    var_dump($t !== false && $fence > 0);
    var_dump(ephpm_kv_set_fenced("session:$sid", 'by|s:1:"B";', "session_lock:$sid", $fence, 60));
    var_dump($how === 'destroy' ? session_destroy() : session_write_close());
    var_dump(ephpm_kv_get("session:$sid"));               // B's data intact
    var_dump(ephpm_kv_get("session_lock:$sid") === $t);  // and B's lock too
    if (session_status() === PHP_SESSION_ACTIVE) {
        session_abort();
    }
    ephpm_kv_unlock("session_lock:$sid", $t);
}
?>
--EXPECTF--
bool(true)
bool(true)

Warning: session_write_close(): ephpm: session s31write: not written, this request no longer holds the session lock (it expired after ephpm.session_lock_ttl=1 s, or the store lost it, and another request may hold it); the stored session is left as it is in %s on line %d

Warning: session_write_close(): Failed to write session data (ephpm). %s
bool(true)
string(11) "by|s:1:"B";"
bool(true)
bool(true)
bool(true)

Warning: session_write_close(): ephpm: session s31empty: not written, this request no longer holds the session lock (it expired after ephpm.session_lock_ttl=1 s, or the store lost it, and another request may hold it); the stored session is left as it is in %s on line %d

Warning: session_write_close(): Failed to write session data (ephpm). %s
bool(true)
string(11) "by|s:1:"B";"
bool(true)
bool(true)
bool(true)

Warning: session_destroy(): ephpm: session s31destroy: not destroyed, this request no longer holds the session lock (it expired after ephpm.session_lock_ttl=1 s, or the store lost it, and another request may hold it); the stored session is left as it is in %s on line %d

Warning: session_destroy(): Session object destruction failed in %s on line %d
bool(false)
string(11) "by|s:1:"B";"
bool(true)
