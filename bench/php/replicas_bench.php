<?php
/*
 * The cost of waiting for a replica (wait_replicas, issue 29): µs per lock
 * pair (grant + release) and per guarded session write, through ephpm on
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
    'phpredis' => $pair(false),
    'phpredis+WAIT' => $pair(true),
], 200, 25, 'median');
printf("lock pair us: ephpm %.1f phpredis %.1f phpredis+WAIT %.1f\n", $t['ephpm'] / 1000, $t['phpredis'] / 1000, $t['phpredis+WAIT'] / 1000);
