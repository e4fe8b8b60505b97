--TEST--
session handler: a request that runs past its lock's TTL while no other request wants the session keeps its write, its destroy and the removal of its emptied data (the grant's fence)
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
session.lazy_write=0
ephpm.session_lock_ttl=1
--FILE--
<?php
// The write: 2 s of work under a lock of 1 s, nobody else asks for it.
session_id('s30');
session_start();
$_SESSION['by'] = 'A';
usleep(2_000_000);
var_dump(ephpm_kv_exists('session_lock:s30'));      // the lock expired meanwhile
var_dump(session_write_close());                     // and the write is kept
var_dump(ephpm_kv_get('session:s30'));
var_dump(ephpm_kv_exists('session_lock:s30'));

// The removal of emptied data, after the same overrun.
session_start();
$_SESSION = [];
usleep(1_200_000);
var_dump(session_write_close(), ephpm_kv_exists('session:s30'));

// The destroy, after the same overrun.
ephpm_kv_set('session:s30', 'by|s:1:"A";');
session_start();
usleep(1_200_000);
var_dump(session_destroy(), ephpm_kv_exists('session:s30'), ephpm_kv_exists('session_lock:s30'));

// In time, the write releases the lock it holds (a lock of 300 s here:
// "in time" must not hang on this host's pace within 1 s).
ini_set('ephpm.session_lock_ttl', '300');
session_id('s30');
session_start();
$_SESSION['in'] = 'time';
var_dump(ephpm_kv_exists('session_lock:s30'), session_write_close(), ephpm_kv_exists('session_lock:s30'));
var_dump(ephpm_kv_get('session:s30'));
?>
--EXPECT--
bool(false)
bool(true)
string(11) "by|s:1:"A";"
bool(false)
bool(true)
bool(false)
bool(true)
bool(false)
bool(false)
bool(true)
bool(true)
bool(false)
string(14) "in|s:4:"time";"
