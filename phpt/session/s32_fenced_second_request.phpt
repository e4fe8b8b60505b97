--TEST--
session handler, a store shared by processes: a second request (another process) waits for the session, takes the lock when the first overruns it, and writes; the first's late write is refused and the second's data stays
--EXTENSIONS--
ephpm
session
--SKIPIF--
<?php
if (ephpm_kv_stats()['backend'] === 'memory') die('skip a store shared by processes (shm, Redis) only');
?>
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
session.lazy_write=0
ephpm.session_lock_ttl=1
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
$sid = 's32' . bin2hex(random_bytes(6));
session_id($sid);
session_start();                                     // request A
$_SESSION['by'] = 'A';
// Request B, a process of its own through the session handler: it waits
// for A's lock, gets it when A's TTL ends (1 s), and writes.
$b = ephpm_child(
    'session_id("' . $sid . '"); session_start(); $_SESSION["by"] = "B"; var_dump(session_write_close());',
    ['ephpm.kv_backend' => '"' . ini_get('ephpm.kv_backend') . '"', 'session.save_handler' => 'ephpm',
     'session.use_cookies' => '0', 'session.cache_limiter' => '', 'session.lazy_write' => '0',
     'ephpm.session_lock_ttl' => '30', 'ephpm.session_lock_wait' => '300']);    // the wait: a hang catch
echo "B: $b";
var_dump(session_write_close());                     // A, 1 s late: refused
var_dump(ephpm_kv_get("session:$sid"));               // B's data stays
var_dump(ephpm_kv_exists("session_lock:$sid"));      // B released its lock
ephpm_kv_del("session:$sid");
?>
--EXPECTF--
B: bool(true)

Warning: session_write_close(): ephpm: session s32%s: not written, this request no longer holds the session lock (it expired after ephpm.session_lock_ttl=1 s, or the store lost it, and another request may hold it); the stored session is left as it is in %s on line %d

Warning: session_write_close(): Failed to write session data (ephpm). %s
bool(true)
string(11) "by|s:1:"B";"
bool(false)
