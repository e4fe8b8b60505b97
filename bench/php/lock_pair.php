<?php
/*
 * The lock pair alone against APCu's add + delete, for bench/ab.sh: ns per
 * pair (best of ROUNDS alternating rounds of N pairs; default 7 of 200 000)
 * with a TTL of 30 s, with none (no clock read, no expiry bookkeeping), and
 * APCu's, on one line. On a busy machine shorter rounds (20000 60) are
 * preempted less often, and their best round spreads less.
 *
 * Usage: lock_pair.php [N [ROUNDS]]
 */
declare(strict_types=1);
require __DIR__ . '/measure.php';

$token = bin2hex(random_bytes(16));
$pair = fn (int $ttl) => function (int $n) use ($token, $ttl) {
    for ($i = 0; $i < $n; $i++) {
        ephpm_kv_setnx('bench:l', $token, $ttl);
        ephpm_kv_del_if_eq('bench:l', $token);
    }
};
$t = measure_all([
    'ttl' => $pair(30),
    'nottl' => $pair(0),
    'apcu' => function (int $n) use ($token) {
        for ($i = 0; $i < $n; $i++) {
            apcu_add('bench:l', $token, 30);
            apcu_delete('bench:l');
        }
    },
], (int) ($argv[1] ?? 200_000), (int) ($argv[2] ?? 7));
printf("lock pair %.0f ns, no TTL %.0f ns, APCu add+delete %.0f ns, ratio %.2fx\n",
    $t['ttl'], $t['nottl'], $t['apcu'], $t['ttl'] / $t['apcu']);
