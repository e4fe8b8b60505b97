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

/* µs per call. */
function measure_us(callable $f, int $n): float
{
    return measure($f, $n) / 1000;
}

$v = str_repeat('v', 64);
$token = bin2hex(random_bytes(16));
$delIfEq = 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end';
ephpm_kv_set('bench:k', $v);
ephpm_kv_set('near:k', $v);
$n = 5000;

$rows = [
    ['get 64 B', measure_us(fn () => ephpm_kv_get('bench:k'), $n), measure_us(fn () => $redis->get('bench:k'), $n)],
    ['set 64 B', measure_us(fn () => ephpm_kv_set('bench:k', $v), $n), measure_us(fn () => $redis->set('bench:k', $v), $n)],
    ['lock pair', measure_us(function () use ($token) {
        ephpm_kv_setnx('bench:l', $token, 30);
        ephpm_kv_del_if_eq('bench:l', $token);
    }, $n), measure_us(function () use ($redis, $token, $delIfEq) {
        $redis->set('bench:l', $token, ['nx', 'px' => 30000]);
        $redis->eval($delIfEq, ['bench:l', $token], 1);
    }, $n)],
];
printf("%-12s %12s %12s %8s\n", 'op', 'ephpm', 'phpredis', 'ratio');
foreach ($rows as [$op, $e, $r]) {
    printf("%-12s %9.1f us %9.1f us %7.2fx\n", $op, $e, $r, $e / $r);
}
$hit = measure_us(fn () => ephpm_kv_get('near:k'), 100_000);
$trip = measure_us(fn () => ephpm_kv_get('bench:k'), $n);
printf("\nnear cache hit %.2f us, Redis round trip %.1f us (%.0fx)\n", $hit, $trip, $trip / $hit);
