--TEST--
session handler: wait budget expiry with each ephpm.session_lock_timeout_action
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
ephpm.session_lock_wait=0.3
--FILE--
<?php
ephpm_kv_set('session:s10', 'v|s:6:"stored";');
ephpm_kv_setnx('session_lock:s10', 'foreign', 3600);     // outlasts the three waits, however slow

foreach (['proceed', 'readonly', 'fail'] as $action) {
    echo "== $action\n";
    ini_set('ephpm.session_lock_timeout_action', $action);
    session_id('s10');
    $t = hrtime(true);
    $started = session_start();
    $waited = (hrtime(true) - $t) / 1e9;
    // Not before the 0.3 s wait (the 300 s bound is a hang catch; the warning
    // says the wait ended it, not the lock's TTL).
    var_dump($started, $waited >= 0.3 && $waited < 300);
    if ($started) {
        var_dump($_SESSION['v']);
        $_SESSION['v'] = $action;
        var_dump(session_write_close());
        var_dump(ephpm_kv_get('session:s10'));
        ephpm_kv_set('session:s10', 'v|s:6:"stored";');
    }
    var_dump(ephpm_kv_get('session_lock:s10'));   // the foreign lock is untouched
}
?>
--EXPECTF--
== proceed

Warning: session_start(): ephpm: session s10: lock not acquired after waiting %f s, another request holds it; continuing without the lock (ephpm.session_lock_timeout_action=proceed) in %s on line %d
bool(true)
bool(true)
string(6) "stored"
bool(true)
string(16) "v|s:7:"proceed";"
string(7) "foreign"
== readonly

Warning: session_start(): ephpm: session s10: lock not acquired after waiting %f s, another request holds it; the session is read-only for this request (ephpm.session_lock_timeout_action=readonly) in %s on line %d
bool(true)
bool(true)
string(6) "stored"

Warning: session_write_close(): ephpm: session s10: not written, this request did not get the session lock (ephpm.session_lock_timeout_action=readonly) in %s on line %d

Warning: session_write_close(): Failed to write session data (ephpm). %s
bool(true)
string(15) "v|s:6:"stored";"
string(7) "foreign"
== fail

Warning: session_start(): ephpm: session s10: lock not acquired after waiting %f s, another request holds it; the session is not started (ephpm.session_lock_timeout_action=fail) in %s on line %d

Warning: session_start(): Failed to read session data: ephpm (path: %s) in %s on line %d
bool(false)
bool(true)
string(7) "foreign"
