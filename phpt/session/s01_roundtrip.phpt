--TEST--
session handler: round trip through the store, data under session:<sid>, missing session reads empty
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
session.serialize_handler=php
--FILE--
<?php
session_id('s01abc');
var_dump(session_start(), $_SESSION);               // a missing session is empty
$_SESSION['user'] = 'alice';
$_SESSION['bin'] = "a\0b";
var_dump(session_write_close());
var_dump(ephpm_kv_get('session:s01abc') === "user|s:5:\"alice\";bin|s:3:\"a\0b\";");
var_dump(ephpm_kv_get('session_lock:s01abc'));     // released

session_start();
var_dump($_SESSION['user'], $_SESSION['bin'] === "a\0b");
session_write_close();
?>
--EXPECT--
bool(true)
array(0) {
}
bool(true)
bool(true)
NULL
string(5) "alice"
bool(true)
