--TEST--
session handler: a session id outside A-Z a-z 0-9 "," "-" (or too long) is refused, as the files handler refuses it
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
session.use_strict_mode=0
--FILE--
<?php
$before = ephpm_kv_stats()['keys'];
foreach (['_', 'abc$x', '../../etc/passwd', 'a.b', str_repeat('a', 300)] as $sid) {
    session_id($sid);
    var_dump(@session_start());
    echo error_get_last()['message'] ?? '', "\n";
    $_SESSION['x'] = 1;
    @session_write_close();
}
var_dump(ephpm_kv_stats()['keys'] === $before);     // nothing was stored
// Valid ids of every allowed character work.
session_id('Az09,-');
var_dump(session_start());
$_SESSION['x'] = 1;
session_write_close();
var_dump(ephpm_kv_exists('session:Az09,-'));
?>
--EXPECTF--
bool(false)
session_start(): Failed to read session data: ephpm (path: %S)
bool(false)
session_start(): Failed to read session data: ephpm (path: %S)
bool(false)
session_start(): Failed to read session data: ephpm (path: %S)
bool(false)
session_start(): Failed to read session data: ephpm (path: %S)
bool(false)
session_start(): Failed to read session data: ephpm (path: %S)
bool(true)
bool(true)
bool(true)
