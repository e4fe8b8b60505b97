--TEST--
Redis backend on a server that may evict keys: locks, lock_info, fence and sessions fail with UNAVAILABLE naming the policy and the fix and saying nothing was done, plain values work; allow_evicting_server=1 opts in
--EXTENSIONS--
ephpm
session
--SKIPIF--
<?php if (!is_executable(trim((string) shell_exec('command -v redis-server')))) die('skip redis-server not installed'); ?>
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
require __DIR__ . '/../inc/redis.inc';
// Servers of this test's own, which evict any key when 3 MB are used: one
// for each child, so that the second takes its lock on an empty server.
// The first child's 4 MB of values leave its server at the limit, where
// the approximate LRU may evict a key just written (the lock itself): the
// very reason locks are refused on such a server unless one opts in.
$ports = [];
for ($i = 0; $i < 2; $i++) {
    $ports[] = ephpm_redis_server('--maxmemory', '3mb', '--maxmemory-policy', 'allkeys-lru');
}

$code = <<<'PHP'
    $calls = ['ephpm_kv_lock' => ['report', 300], 'ephpm_kv_lock_info' => ['report'], 'ephpm_kv_fence' => ['report'],
              'ephpm_kv_set_many' => [['t25:a' => '1', 'session:t25m' => '2']]];
    foreach ($calls as $f => $args) {
        try { var_dump($f(...$args)); } catch (Ephpm\KvException $e) {
            echo $e->getCode() === Ephpm\KvException::UNAVAILABLE ? 'UNAVAILABLE' : $e->getCode(), ': ', $e->getMessage(), "\n";
        }
    }
    for ($i = 0; $i < 1000; $i++) { ephpm_kv_set("cache:$i", str_repeat('x', 4096)); }
    var_dump(strlen(ephpm_kv_get('cache:999')), ephpm_kv_incr('hits'));
    set_error_handler(function ($no, $msg) { echo "warning: $msg\n"; return true; });
    session_id('t25');
    var_dump(session_start());
    restore_error_handler();
    PHP;
$ini = ['session.save_handler' => 'ephpm', 'session.use_cookies' => '0', 'session.cache_limiter' => ''];
echo ephpm_child($code, $ini + ['ephpm.kv_backend' => "redis://127.0.0.1:$ports[0]"]);
echo "-- allow_evicting_server=1\n";
echo ephpm_child($code, $ini + ['ephpm.kv_backend' => "\"redis://127.0.0.1:$ports[1]?allow_evicting_server=1\""]);
?>
--EXPECTF--
UNAVAILABLE: ephpm_kv_lock(): the store is unavailable; nothing was written or granted (the Redis server may evict keys: 127.0.0.1:%d has maxmemory 3145728 and maxmemory-policy allkeys-lru, so when full it evicts keys, and an evicted lock is granted to a second holder and an evicted session is lost; locks, sessions and compare-and-set calls are refused. Set maxmemory-policy noeviction (or maxmemory 0) on the server, or add allow_evicting_server=1 to ephpm.kv_backend to accept that risk)
UNAVAILABLE: ephpm_kv_lock_info(): the store is unavailable; nothing was written or granted (the Redis server may evict keys: 127.0.0.1:%d has maxmemory 3145728 and maxmemory-policy allkeys-lru%s)
UNAVAILABLE: ephpm_kv_fence(): the store is unavailable; nothing was written or granted (the Redis server may evict keys: 127.0.0.1:%d has maxmemory 3145728 and maxmemory-policy allkeys-lru%s)
UNAVAILABLE: ephpm_kv_set_many(): entry 1 of 2 was not stored, the 0 before it were: the store is unavailable; nothing was written or granted (the Redis server may evict keys: %s)
int(4096)
int(1)
warning: session_start(): ephpm: session t25: lock not acquired: the store is unavailable; nothing was written or granted (the Redis server may evict keys: %s); continuing without the lock (ephpm.session_lock_timeout_action=proceed)
warning: session_start(): ephpm: session t25: reading its data failed: %s
%A
bool(false)
-- allow_evicting_server=1
string(32) "%s"
array(2) {
  ["mode"]=>
  string(9) "exclusive"
  ["holders"]=>
  int(1)
}
int(%d)
bool(true)
int(4096)
int(%d)
bool(true)
