<?php
/*
 * ephpm against its peers, one run, side by side: ns per operation of
 * get (hit), set, and a lock taken and released, for 64 B, 4 KiB and
 * 64 KiB values. APCu is the in-process anchor; phpredis and memcached go
 * over loopback, for scale. Run by bench/run.sh, which starts the servers.
 *
 * Usage: php kv_bench.php REDIS_PORT MEMCACHED_PORT
 */
declare(strict_types=1);

[$_, $redisPort, $mcPort] = $argv + [null, 0, 0];

$redis = null;
if (class_exists(Redis::class) && $redisPort) {
    $redis = new Redis();
    $redis->connect('127.0.0.1', (int) $redisPort);
}
$mc = null;
if (class_exists(Memcached::class) && $mcPort) {
    $mc = new Memcached();
    $mc->addServer('127.0.0.1', (int) $mcPort);
    $mc->setOption(Memcached::OPT_COMPRESSION, false);
}
if (!function_exists('apcu_fetch') || !apcu_enabled()) {
    fwrite(STDERR, "APCu is not enabled (apc.enable_cli=1)\n");
    exit(1);
}

require __DIR__ . '/measure.php';

$token = bin2hex(random_bytes(16));
// ephpm's lock pair, $n times, with a TTL of $ttl seconds (0: none).
$ephpmLockPair = fn (int $ttl) => function (int $n) use ($token, $ttl) {
    for ($i = 0; $i < $n; $i++) {
        ephpm_kv_setnx('bench:l', $token, $ttl);
        ephpm_kv_del_if_eq('bench:l', $token);
    }
};
$delIfEq = 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end';
$rows = [];
foreach ([64 => '64 B', 4096 => '4 KiB', 65536 => '64 KiB'] as $size => $label) {
    $v = str_repeat('v', $size);
    $n = $size >= 65536 ? 10_000 : 100_000;
    $nNet = 5_000;
    ephpm_kv_set('bench:k', $v);
    apcu_store('bench:k', $v);
    $redis?->set('bench:k', $v);
    $mc?->set('bench:k', $v);

    // In-process peers: the loop written out, so that a figure is the call
    // itself (see measure.php). Network peers: looped closures.
    $ops = [
        'get' => [
            'ephpm' => function (int $n) { for ($i = 0; $i < $n; $i++) { ephpm_kv_get('bench:k'); } },
            'apcu' => function (int $n) { for ($i = 0; $i < $n; $i++) { apcu_fetch('bench:k'); } },
            'redis' => looped($redis ? fn () => $redis->get('bench:k') : null),
            'mc' => looped($mc ? fn () => $mc->get('bench:k') : null),
        ],
        'set' => [
            'ephpm' => function (int $n) use ($v) { for ($i = 0; $i < $n; $i++) { ephpm_kv_set('bench:k', $v); } },
            'apcu' => function (int $n) use ($v) { for ($i = 0; $i < $n; $i++) { apcu_store('bench:k', $v); } },
            'redis' => looped($redis ? fn () => $redis->set('bench:k', $v) : null),
            'mc' => looped($mc ? fn () => $mc->set('bench:k', $v) : null),
        ],
    ];
    if ($size === 64) {
        // A lock taken with a TTL and released: the correct pattern where the
        // peer has one (Redis: SET NX PX + a compare-and-delete script);
        // APCu and memcached can only delete blindly.
        $ops['lock pair'] = [
            'ephpm' => $ephpmLockPair(30),
            'apcu' => function (int $n) use ($token) {
                for ($i = 0; $i < $n; $i++) {
                    apcu_add('bench:l', $token, 30);
                    apcu_delete('bench:l');
                }
            },
            'redis' => looped($redis ? function () use ($redis, $token, $delIfEq) { $redis->set('bench:l', $token, ['nx', 'px' => 30000]); $redis->eval($delIfEq, ['bench:l', $token], 1); } : null),
            'mc' => looped($mc ? function () use ($mc, $token) { $mc->add('bench:l', $token, 30); $mc->delete('bench:l'); } : null),
        ];
    }
    foreach ($ops as $op => $fs) {
        // In-process peers side by side; the network peers in their own
        // rounds of fewer calls.
        $local = measure_all(['ephpm' => $fs['ephpm'], 'apcu' => $fs['apcu']], $n, 7);
        $net = measure_all(['redis' => $fs['redis'], 'mc' => $fs['mc']], $nNet, 3);
        $rows[] = [$op, $label, $local['ephpm'], $local['apcu'], $local['ephpm'] / $local['apcu'], $net['redis'], $net['mc']];
    }
}

$fmt = fn (?float $ns) => $ns === null ? 'n/a' : ($ns >= 10_000 ? sprintf('%.1f us', $ns / 1000) : sprintf('%.0f ns', $ns));
printf("%-10s %-7s %10s %10s %8s %12s %12s\n", 'op', 'value', 'ephpm', 'APCu', 'ratio', 'phpredis', 'memcached');
foreach ($rows as [$op, $label, $te, $ta, $ratio, $tr, $tm]) {
    printf("%-10s %-7s %10s %10s %7.2fx %12s %12s\n", $op, $label, $fmt($te), $fmt($ta), $ratio, $fmt($tr), $fmt($tm));
}
printf("\nPHP %s, %s; ratio = ephpm / APCu (lower is better).\n", PHP_VERSION, php_uname('m'));

// Where the lock pair's time goes: the same pair without a TTL (no clock
// reads, no expiry heap), two crossings that do almost nothing (exists on
// a missing key), PHP's own cost of two internal calls, and of the loop.
$parts = measure_all([
    'lock pair, TTL 30 s' => $ephpmLockPair(30),
    'lock pair, no TTL' => $ephpmLockPair(0),
    'two exists (miss)' => function (int $n) {
        for ($i = 0; $i < $n; $i++) {
            ephpm_kv_exists('bench:none');
            ephpm_kv_exists('bench:none');
        }
    },
    'two trivial calls' => function (int $n) use ($token) {
        for ($i = 0; $i < $n; $i++) {
            str_contains('bench:l', $token);
            str_ends_with('bench:l', $token);
        }
    },
    'empty loop' => function (int $n) { for ($i = 0; $i < $n; $i++) { } },
], 200_000, 7);
echo "\nWhere the lock pair's time goes (ns per loop step):\n";
foreach ($parts as $name => $ns) {
    printf("  %-22s %6.0f ns\n", $name, $ns);
}
