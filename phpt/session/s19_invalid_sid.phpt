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
// A key that cannot exist (too long) counts as not stored.
function stored(string $key): bool
{
    try {
        return ephpm_kv_exists($key);
    } catch (ValueError) {
        return false;
    }
}
$sids = ['_', 'abc$x', '../../etc/passwd', 'a.b', str_repeat('a', 300)];
foreach ($sids as $sid) {
    session_id($sid);
    var_dump(@session_start());
    echo error_get_last()['message'] ?? '', "\n";
    $_SESSION['x'] = 1;
    @session_write_close();
}
// Nothing was stored: no data and no lock under any of the ids. (Not the
// store's key count: on a backend shared with other tests it moves.)
$left = array_filter($sids, fn ($sid) => stored("session:$sid") || stored("session_lock:$sid"));
var_dump($left === []);
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
