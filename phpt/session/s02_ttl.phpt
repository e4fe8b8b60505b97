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
$t = hrtime(true);
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

// s02short is still there, unless this host took most of its second to get
// here (then it may be gone: the host's pace is not asserted).
$short = ephpm_kv_get('session:s02short');
var_dump($short !== null || (hrtime(true) - $t) / 1e9 > 0.9, ephpm_kv_get('session:s02long') !== null);
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
