--TEST--
session handler on a full Redis (maxmemory, noeviction): the request's write is refused with a warning and its old data kept, and the request waiting in line gets the lock at once, not at the lock's TTL
--EXTENSIONS--
ephpm
session
--SKIPIF--
<?php
require __DIR__ . '/../inc/redis.inc';
if (!ephpm_redis_standalone()) die('skip a standalone Redis only (the test fills it)');
?>
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
session.lazy_write=0
ephpm.session_lock_ttl=3600
--FILE--
<?php
require __DIR__ . '/../inc/procs.inc';
require __DIR__ . '/../inc/redis.inc';
$sid = 's40' . bin2hex(random_bytes(6));
session_id($sid);
session_start();                                      // a first request
$_SESSION['by'] = 'first';
var_dump(session_write_close());
session_start();                                      // request A holds the lock
$_SESSION['by'] = 'A';
// Request B, a process of its own, waits in line for A's lock. A's lock
// (an hour) and B's wait (600 s) are beyond any host's pace: B gets the
// lock from A's close, not from the lock's TTL (300 s: a hang catch; B
// waits for as long as this test takes to fill the server, not timed).
$b = ephpm_spawn('session_id("' . $sid . '"); $t = microtime(true); session_start(); $waited = microtime(true) - $t;'
    . ' echo "B waited less than 300 s: ", var_export($waited < 300, true), "\n";'
    . ' echo "B read: ", $_SESSION["by"], "\n"; $_SESSION["by"] = "B"; var_dump(session_write_close());', 1,
    ['session.save_handler' => 'ephpm', 'session.use_cookies' => '0', 'session.cache_limiter' => '',
     'session.lazy_write' => '0', 'ephpm.session_lock_ttl' => '30', 'ephpm.session_lock_wait' => '600']);
ephpm_release($b);
$end = microtime(true) + 120;                        // a hang catch
while (!ephpm_kv_exists('ephpm:line:{' . $sid . '}') && microtime(true) < $end) {
    usleep(5000);
}
echo "B in line: ", var_export(ephpm_kv_exists('ephpm:line:{' . $sid . '}'), true), "\n";
echo ephpm_redis_cmd('SET', 'ballast', str_repeat('x', 2 << 20)), "\n";
echo ephpm_redis_cmd('CONFIG', 'SET', 'maxmemory-policy', 'noeviction'), "\n";
echo ephpm_redis_cmd('CONFIG', 'SET', 'maxmemory', '1mb'), "\n";
var_dump(session_write_close());                     // A: refused; its close hands the lock to B
echo ephpm_collect($b)[0];
echo ephpm_redis_cmd('CONFIG', 'SET', 'maxmemory', '0'), "\n";
echo ephpm_redis_cmd('DEL', 'ballast'), "\n";
var_dump(ephpm_kv_get("session:$sid"));              // the first request's data stays
var_dump(ephpm_kv_exists("session_lock:$sid"));      // B released its lock
ephpm_kv_del("session:$sid");
?>
--CLEAN--
<?php
require __DIR__ . '/../inc/redis.inc';
ephpm_redis_cmd('CONFIG', 'SET', 'maxmemory', '0');
ephpm_redis_cmd('DEL', 'ballast');
?>
--EXPECTF--
bool(true)
B in line: true
+OK
+OK
+OK

Warning: session_write_close(): ephpm: session s40%s: not written: the store is out of memory; nothing was written (kv: out of memory: OOM command not allowed when used memory > 'maxmemory'.) in %s on line %d

Warning: session_write_close(): Failed to write session data (ephpm). %s
bool(true)
B waited less than 300 s: true
B read: first

Warning: session_write_close(): ephpm: session s40%s: not written: the store is out of memory; nothing was written (kv: out of memory: OOM command not allowed when used memory > 'maxmemory'.) in %s on line %d

Warning: session_write_close(): Failed to write session data (ephpm). %s
bool(true)
+OK
:1
string(15) "by|s:5:"first";"
bool(false)
