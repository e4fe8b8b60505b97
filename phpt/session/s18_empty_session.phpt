--TEST--
session handler: a session whose data is empty is not stored, and emptying one removes it
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
--FILE--
<?php
ob_start(); // output must not count as sent headers for ini_set()
// A visitor who stores nothing costs the store nothing, with lazy writes
// on (the default) and off.
foreach (['1', '0'] as $lazy) {
    ini_set('session.lazy_write', $lazy);
    $sid = "s18lazy$lazy";
    session_id($sid);
    session_start();
    var_dump(session_write_close(), ephpm_kv_exists("session:$sid"));

    session_start();
    $_SESSION['csrf'] = 'abc';
    session_write_close();
    var_dump(ephpm_kv_exists("session:$sid"));

    session_start();
    $_SESSION = [];                                  // emptied: removed
    var_dump(session_write_close(), ephpm_kv_exists("session:$sid"));
    var_dump(ephpm_kv_exists("session_lock:$sid"));  // and the lock released
}
?>
--EXPECT--
bool(true)
bool(false)
bool(true)
bool(true)
bool(false)
bool(false)
bool(true)
bool(false)
bool(true)
bool(true)
bool(false)
bool(false)
