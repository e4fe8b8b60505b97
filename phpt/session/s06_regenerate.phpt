--TEST--
session handler: regenerate_id, abort, reset, read_and_close and a restart keep exactly one lock
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
ob_start(); // session_regenerate_id() needs headers unsent
function locks(string ...$ids): string {
    return implode(' ', array_map(fn ($id) => "$id:" . (ephpm_kv_get("session_lock:$id") === null ? 'free' : 'held'), $ids));
}

session_id('s06old');
session_start();
$_SESSION['v'] = 'one';
session_regenerate_id(false);               // keep the old session
$a = session_id();
echo locks('s06old', $a), "\n";
var_dump(ephpm_kv_get('session:s06old') !== null);
session_write_close();
echo locks($a), "\n";

session_id($a);
session_start();
session_regenerate_id(true);                // delete the old session
$b = session_id();
echo locks($a, $b), "\n";
var_dump(ephpm_kv_get("session:$a"), $_SESSION['v']);
session_write_close();
echo locks($b), "\n";

// session_abort(): no write, lock released
session_id($b);
session_start();
$_SESSION['v'] = 'changed';
session_abort();
echo locks($b), "\n";

// session_reset(): back to the stored data, still locked
session_start();
$_SESSION['v'] = 'changed';
session_reset();
var_dump($_SESSION['v']);
echo locks($b), "\n";
session_write_close();

// read_and_close: read, and the lock is released at once
session_start(['read_and_close' => true]);
var_dump($_SESSION['v'], session_status() === PHP_SESSION_NONE);
echo locks($b), "\n";

// a second session_start() after session_write_close() locks again
session_start();
echo locks($b), "\n";
session_write_close();
echo locks($b), "\n";
?>
--EXPECTF--
s06old:free %s:held
bool(true)
%s:free
%s:free %s:held
NULL
string(3) "one"
%s:free
%s:free
string(3) "one"
%s:held
string(3) "one"
bool(true)
%s:free
%s:held
%s:free
