--TEST--
session handler, ephpm.session_lock_mode=optimistic: no lock while the request runs; the write merges this request's changes into what is stored
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
ephpm.session_lock_mode=optimistic
--FILE--
<?php
ob_start(); // session ini settings change only before output
// Another request's write, made while this one runs.
function other(string $sid, string $data) { ephpm_kv_set("session:$sid", $data); }

foreach (['php', 'php_serialize'] as $handler) {
    ini_set('session.serialize_handler', $handler);
    $enc = fn(array $vars) => $handler === 'php_serialize' ? serialize($vars)
        : implode('', array_map(fn($k, $v) => $k . '|' . serialize($v), array_keys($vars), $vars));
    $sid = "s23$handler";
    $sid = str_replace('_', '-', $sid);

    echo "-- $handler: changes merged, the other request's keys kept, the later write wins on a shared key\n";
    other($sid, $enc(['a' => 1, 'b' => 1, 'x' => 'base']));
    session_id($sid);
    session_start();
    var_dump(ephpm_kv_get("session_lock:$sid"));          // null: no lock while the request runs
    other($sid, $enc(['a' => 1, 'b' => 1, 'c' => 2, 'x' => 'other']));
    $_SESSION['x'] = 'mine';
    unset($_SESSION['b']);
    $_SESSION['d'] = [4];
    var_dump(session_write_close());
    var_dump(ephpm_kv_get("session:$sid") === $enc(['a' => 1, 'c' => 2, 'x' => 'mine', 'd' => [4]]));
    var_dump(ephpm_kv_get("session_lock:$sid"));          // released

    echo "-- $handler: a request that changed nothing writes nothing\n";
    ini_set('session.lazy_write', '0');
    session_id($sid);
    session_start();
    other($sid, $enc(['z' => 9]));
    $_SESSION['a'] = 1;                                    // the value it had
    var_dump(session_write_close());
    var_dump(ephpm_kv_get("session:$sid") === $enc(['z' => 9]));
    ini_set('session.lazy_write', '1');

    echo "-- $handler: a value changed in type only is a change\n";
    session_id($sid);
    session_start();
    $_SESSION['z'] = '9';
    var_dump(session_write_close());
    var_dump(ephpm_kv_get("session:$sid") === $enc(['z' => '9']));

    echo "-- $handler: removing the last key stores the empty session\n";
    session_id($sid);
    session_start();
    unset($_SESSION['z']);
    var_dump(session_write_close());
    var_dump((string) ephpm_kv_get("session:$sid") === $enc([])); // php: no entry at all

    echo "-- $handler: destroy\n";
    other($sid, $enc(['a' => 1]));
    session_id($sid);
    session_start();
    var_dump(session_destroy());
    var_dump(ephpm_kv_get("session:$sid"), ephpm_kv_get("session_lock:$sid"));
}

echo "-- the setting\n";
var_dump(ini_get('ephpm.session_lock_mode'));
var_dump(ini_set('ephpm.session_lock_mode', 'bogus'));
var_dump(ini_get('ephpm.session_lock_mode'));
?>
--EXPECTF--
-- php: changes merged, the other request's keys kept, the later write wins on a shared key
NULL
bool(true)
bool(true)
NULL
-- php: a request that changed nothing writes nothing
bool(true)
bool(true)
-- php: a value changed in type only is a change
bool(true)
bool(true)
-- php: removing the last key stores the empty session
bool(true)
bool(true)
-- php: destroy
bool(true)
NULL
NULL
-- php_serialize: changes merged, the other request's keys kept, the later write wins on a shared key
NULL
bool(true)
bool(true)
NULL
-- php_serialize: a request that changed nothing writes nothing
bool(true)
bool(true)
-- php_serialize: a value changed in type only is a change
bool(true)
bool(true)
-- php_serialize: removing the last key stores the empty session
bool(true)
bool(true)
-- php_serialize: destroy
bool(true)
NULL
NULL
-- the setting
string(10) "optimistic"

Warning: ini_set(): ephpm.session_lock_mode must be exclusive or optimistic, "bogus" given in %s on line %d
bool(false)
string(10) "optimistic"
