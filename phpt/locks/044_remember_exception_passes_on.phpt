--TEST--
ephpm_kv_remember: when $compute throws in one process, the exception is that caller's, and a process waiting on the same key computes instead; a process ending inside $compute (exit, a fatal error) releases the lock too
--EXTENSIONS--
ephpm
--SKIPIF--
<?php
if (ephpm_kv_stats()['backend'] === 'memory') die('skip a store shared between processes only');
if (!function_exists('proc_open')) die('skip proc_open');
?>
--FILE--
<?php
require __DIR__ . '/../inc/procs.inc';
ephpm_kv_del('t44:k');
ephpm_kv_del('t44:runs');
// The first process says "computing" from inside $compute and throws once
// it reads "throw"; the second starts only after "computing", so it waits.
// The 300 s waits (and so the fill lock's TTL, which is the wait) are hang
// catches: the first holds the lock while the second process starts.
[$first] = ephpm_spawn('try {
    ephpm_kv_remember("t44:k", 60, function () {
        ephpm_kv_incr("t44:runs");
        echo "computing\n";
        fgets(STDIN);
        throw new RuntimeException("first failed");
    }, 300.0);
} catch (RuntimeException $e) {
    echo "first: ", $e->getMessage(), "\n";
}', 1);
ephpm_release([$first]);
echo fgets($first[1][1]);
[$second] = ephpm_spawn('echo "second: ", ephpm_kv_remember("t44:k", 60, function () {
    ephpm_kv_incr("t44:runs");
    return "computed by the second";
}, 300.0), "\n";', 1);
ephpm_release([$second]);
// The second is blocked on the fill lock until the first lets go of it.
var_dump(ephpm_kv_exists('remember_lock:t44:k'), ephpm_kv_get('t44:runs'));
fwrite($first[1][0], "throw\n");
fflush($first[1][0]);
echo implode('', ephpm_collect([$first, $second]));
var_dump(ephpm_kv_get('t44:k'), ephpm_kv_get('t44:runs'), ephpm_kv_exists('remember_lock:t44:k'));
ephpm_kv_del('t44:k');
ephpm_kv_del('t44:runs');

// A process that ends inside $compute releases its lock on the way out,
// not left to its TTL: exit() unwinds as an exception does, a fatal error
// (max_execution_time) bails out through zend_try.
require __DIR__ . '/../inc/child.inc';
foreach (['t44:exit' => 'echo "exit\n"; exit(3);', 't44:time' => 'set_time_limit(1); while (true) {}'] as $key => $body) {
    echo preg_replace('/ in .*/', '', trim(ephpm_child("ephpm_kv_remember('$key', 60, function () { $body }, 300.0);",
        ['ephpm.kv_backend' => ini_get('ephpm.kv_backend')]))), "\n";
    var_dump(ephpm_kv_exists("remember_lock:$key"), ephpm_kv_exists($key));
}
?>
--EXPECT--
computing
bool(true)
string(1) "1"
first: first failed
second: computed by the second
string(22) "computed by the second"
string(1) "2"
bool(false)
exit
bool(false)
bool(false)
Fatal error: Maximum execution time of 1 second exceeded
bool(false)
bool(false)
