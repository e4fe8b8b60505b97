<?php
/*
 * ephpm on its Redis backend against phpredis, on the same server, one run,
 * side by side: µs per operation, and ephpm's near cache against a round
 * trip. Run by bench/run.sh with ephpm.kv_backend pointing at the server
 * and ephpm.kv_near_cache_prefixes=near:.
 *
 * Usage: php redis_bench.php REDIS_PORT
 */
declare(strict_types=1);

$port = (int) ($argv[1] ?? 0);
$redis = new Redis();
$redis->connect('127.0.0.1', $port);

require __DIR__ . '/measure.php';

$v = str_repeat('v', 64);
$token = bin2hex(random_bytes(16));
$delIfEq = 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end';
ephpm_kv_set('bench:k', $v);
ephpm_kv_set('near:k', $v);

// 25 alternating rounds of 400 calls each; the median round of each client.
$ops = [
    'get 64 B' => [
        'ephpm' => looped(fn () => ephpm_kv_get('bench:k')),
        'phpredis' => looped(fn () => $redis->get('bench:k')),
    ],
    'set 64 B' => [
        'ephpm' => looped(fn () => ephpm_kv_set('bench:k', $v)),
        'phpredis' => looped(fn () => $redis->set('bench:k', $v)),
    ],
    'lock pair' => [
        'ephpm' => looped(function () use ($token) {
            ephpm_kv_setnx('bench:l', $token, 30);
            ephpm_kv_del_if_eq('bench:l', $token);
        }),
        'phpredis' => looped(function () use ($redis, $token, $delIfEq) {
            $redis->set('bench:l', $token, ['nx', 'px' => 30000]);
            $redis->eval($delIfEq, ['bench:l', $token], 1);
        }),
    ],
];
$rows = [];
foreach ($ops as $op => $fs) {
    $t = measure_all($fs, 400, 25, 'median');
    $rows[] = [$op, $t['ephpm'] / 1000, $t['phpredis'] / 1000];
}
printf("%-12s %12s %12s %8s\n", 'op', 'ephpm', 'phpredis', 'ratio');
foreach ($rows as [$op, $e, $r]) {
    printf("%-12s %9.1f us %9.1f us %7.2fx\n", $op, $e, $r, $e / $r);
}
$t = measure_all(['hit' => looped(fn () => ephpm_kv_get('near:k')), 'trip' => looped(fn () => ephpm_kv_get('bench:k'))], 2000, 5, 'median');
[$hit, $trip] = [$t['hit'] / 1000, $t['trip'] / 1000];
printf("\nnear cache hit %.2f us, Redis round trip %.1f us (%.0fx)\n", $hit, $trip, $trip / $hit);
