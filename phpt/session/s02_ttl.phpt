--TEST--
session handler: session data lives for session.gc_maxlifetime seconds
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
session.lazy_write=0
--FILE--
<?php
ini_set('session.gc_maxlifetime', '1');
session_id('s02short');
session_start();
$_SESSION['x'] = 1;
session_write_close();

ini_set('session.gc_maxlifetime', '60');
session_id('s02long');
session_start();
$_SESSION['x'] = 1;
session_write_close();

var_dump(ephpm_kv_get('session:s02short') !== null, ephpm_kv_get('session:s02long') !== null);
usleep(1_100_000);
var_dump(ephpm_kv_get('session:s02short'), ephpm_kv_get('session:s02long') !== null);

session_id('s02short');
session_start();
var_dump($_SESSION);                                 // expired: a fresh session
session_write_close();
?>
--EXPECT--
bool(true)
bool(true)
NULL
bool(true)
array(0) {
}
