<?php
/*
 * The cost of waiting for a replica (wait_replicas, issue 29): µs per lock
 * pair (grant + release: ephpm_kv_setnx() and ephpm_kv_del_if_eq(), and
 * ephpm_kv_lock() and ephpm_kv_unlock(), plain and bound to the process
 * under its lease), through ephpm on
 * the backend this process was given, and through phpredis on the same
 * master with and without WAIT 1 after each write, side by side: median
 * of 25 alternating rounds of 200. bench/replicas.sh runs it with ephpm
 * waiting and not, in turn.
 *
 * Usage: php replicas_bench.php REDIS_PORT
 */
declare(strict_types=1);
require __DIR__ . '/measure.php';

$redis = new Redis();
$redis->connect('127.0.0.1', (int) $argv[1]);
$token = bin2hex(random_bytes(16));
$delIfEq = 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end';
$pair = function (bool $wait) use ($redis, $token, $delIfEq) {
    return looped(function () use ($redis, $token, $delIfEq, $wait) {
        $redis->set('bench:l', $token, ['nx', 'px' => 30000]);
        if ($wait) {
            $redis->rawCommand('WAIT', 1, 1000);
        }
        $redis->eval($delIfEq, ['bench:l', $token], 1);
        if ($wait) {
            $redis->rawCommand('WAIT', 1, 1000);
        }
    });
};
$t = measure_all([
    'ephpm' => looped(function () use ($token) {
        ephpm_kv_setnx('bench:l', $token, 30);
        ephpm_kv_del_if_eq('bench:l', $token);
    }),
    // The same pair as a lock taken with ephpm_kv_lock(), fenced, and
    // bound to this process under its lease (lock_lease).
    'ephpm lock' => looped(function () {
        ephpm_kv_unlock('bench:k', ephpm_kv_lock('bench:k', 30));
    }),
    'ephpm bound lock' => looped(function () {
        ephpm_kv_unlock('bench:b', ephpm_kv_lock('bench:b', 30, bound: true));
    }),
    'phpredis' => $pair(false),
    'phpredis+WAIT' => $pair(true),
], 200, 25, 'median');
printf("lock pair us: ephpm setnx %.1f lock %.1f bound lock %.1f phpredis %.1f phpredis+WAIT %.1f\n", $t['ephpm'] / 1000,
    $t['ephpm lock'] / 1000, $t['ephpm bound lock'] / 1000, $t['phpredis'] / 1000, $t['phpredis+WAIT'] / 1000);
