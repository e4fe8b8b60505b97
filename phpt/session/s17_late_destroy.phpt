--TEST--
session handler: a request whose lock expired and was taken by another cannot destroy its session
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
ephpm.session_lock_ttl=1
--FILE--
<?php
ob_start(); // output must not count as sent headers for session_regenerate_id()
foreach (['destroy', 'regenerate'] as $how) {
    $sid = "s17$how";
    session_id($sid);
    session_start();
    usleep(1_200_000);                                   // A overruns its lock TTL
    // Request B takes the lock and stores its session.
    var_dump(ephpm_kv_setnx("session_lock:$sid", 'B-token', 30));
    ephpm_kv_set("session:$sid", 'who|s:1:"B";');
    var_dump($how === 'destroy' ? session_destroy() : session_regenerate_id(true));
    var_dump(ephpm_kv_get("session:$sid"));               // B's data intact
    var_dump(ephpm_kv_get("session_lock:$sid"));          // and B's lock too
    if (session_status() === PHP_SESSION_ACTIVE) {
        session_abort();
    }
}

// In time, both delete the session and release the lock.
session_id('s17intime');
session_start();
$_SESSION['x'] = 1;
session_write_close();
session_start();
var_dump(session_destroy(), ephpm_kv_exists('session:s17intime'), ephpm_kv_exists('session_lock:s17intime'));
?>
--EXPECTF--
bool(true)

Warning: session_destroy(): ephpm: session s17destroy: not destroyed, this request no longer holds the session lock (it expired after ephpm.session_lock_ttl=1 s, or the store lost it, and another request may hold it); the stored session is left as it is in %s on line %d

Warning: session_destroy(): Session object destruction failed in %s on line %d
bool(false)
string(12) "who|s:1:"B";"
string(7) "B-token"
bool(true)

Warning: session_regenerate_id(): ephpm: session s17regenerate: not destroyed, this request no longer holds the session lock (it expired after ephpm.session_lock_ttl=1 s, or the store lost it, and another request may hold it); the stored session is left as it is in %s on line %d

Warning: session_regenerate_id(): Session object destruction failed. ID: ephpm (path: %S) in %s on line %d
bool(false)
string(12) "who|s:1:"B";"
string(7) "B-token"
bool(true)
bool(false)
bool(false)
