<?php
/*
 * ephpm's shared-memory backend against APCu (shared memory too), one run,
 * side by side: ns per get (hit), set and lock pair from one process, then
 * total operations per second with PROCS processes hammering at once.
 * Run with ephpm.kv_backend=shm://NAME and apc.enable_cli=1 (bench/run.sh
 * does). The parent touches neither store before it forks: ephpm's library
 * loads in each child on its first call, and APCu's segment, made at
 * startup, is shared by the children.
 *
 * Usage: php shm_bench.php [PROCS [SECONDS [ROUNDS]]] (the hammer's rounds,
 * each ephpm then APCu, printed one by one: on a VM the figure can change
 * state between rounds, see README).
 */
declare(strict_types=1);

[$_, $procs, $seconds, $rounds] = $argv + [null, 8, 2, 3];
$procs = (int) $procs;
$seconds = (float) $seconds;
$rounds = max(1, (int) $rounds);
if (!function_exists('apcu_fetch') || !apcu_enabled()) {
    fwrite(STDERR, "APCu is not enabled (apc.enable_cli=1)\n");
    exit(1);
}
if (!function_exists('pcntl_fork')) {
    fwrite(STDERR, "pcntl is needed\n");
    exit(1);
}
require __DIR__ . '/measure.php';

/*
 * The hammer: $procs children released together at a barrier (each writes
 * a byte on its socket and blocks until the parent, having read all of
 * them, writes one back), each running $work for $seconds and reporting
 * its operation count. Returns the total operations per second.
 */
function hammer(int $procs, float $seconds, callable $work): float
{
    $pairs = [];
    $pids = [];
    for ($p = 0; $p < $procs; $p++) {
        $pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
        $pid = pcntl_fork();
        if ($pid === 0) {
            fclose($pair[0]);
            $work(0, $p); // load and warm up before the barrier
            fwrite($pair[1], 'r');
            fread($pair[1], 1);
            $n = $work($seconds, $p);
            fwrite($pair[1], pack('J', $n));
            exit(0);
        }
        fclose($pair[1]);
        $pairs[] = $pair[0];
        $pids[] = $pid;
    }
    foreach ($pairs as $s) {
        fread($s, 1);
    }
    foreach ($pairs as $s) {
        fwrite($s, 'g');
    }
    $total = 0;
    foreach ($pairs as $s) {
        $total += unpack('J', stream_get_contents($s))[1];
    }
    foreach ($pids as $pid) {
        pcntl_waitpid($pid, $status);
    }
    return $total / $seconds;
}

// A mix per loop step of 10 operations on 1000 keys of 64 B: 8 gets, 1
// set, and a lock pair counted as 1.
$mix = fn (callable $get, callable $set, callable $lock) => function (float $seconds, int $p) use ($get, $set, $lock): int {
    $v = str_repeat('v', 64);
    $token = bin2hex(random_bytes(16));
    if ($seconds == 0) {
        for ($k = 0; $k < 1000; $k++) {
            $set("h:$k", $v);
        }
        return 0;
    }
    $n = 0;
    $end = hrtime(true) + (int) ($seconds * 1e9);
    $k = $p * 7919;
    do {
        for ($i = 0; $i < 100; $i++) {
            $k = ($k + 1) % 1000;
            $get("h:$k"); $get("h:" . (($k + 100) % 1000)); $get("h:" . (($k + 200) % 1000)); $get("h:" . (($k + 300) % 1000));
            $get("h:" . (($k + 400) % 1000)); $get("h:" . (($k + 500) % 1000)); $get("h:" . (($k + 600) % 1000)); $get("h:" . (($k + 700) % 1000));
            $set("h:$k", $v);
            $lock("l:" . ($k % 64), $token);
        }
        $n += 1000;
    } while (hrtime(true) < $end);
    return $n;
};
$ephpmMix = $mix(
    fn ($k) => ephpm_kv_get($k),
    fn ($k, $v) => ephpm_kv_set($k, $v),
    function ($k, $t) { if (ephpm_kv_setnx($k, $t, 30)) { ephpm_kv_del_if_eq($k, $t); } },
);
$apcuMix = $mix(
    fn ($k) => apcu_fetch($k),
    fn ($k, $v) => apcu_store($k, $v),
    function ($k, $t) { if (apcu_add($k, $t, 30)) { apcu_delete($k); } },
);
$hammered = [];
for ($round = 0; $round < $rounds; $round++) {
    $hammered['ephpm'][] = hammer($procs, $seconds, $ephpmMix);
    $hammered['apcu'][] = hammer($procs, $seconds, $apcuMix);
}

// One process: the per-operation figures (after the forks: the library
// loads here now).
$token = bin2hex(random_bytes(16));
$rows = [];
foreach ([64 => '64 B', 4096 => '4 KiB'] as $size => $label) {
    $v = str_repeat('v', $size);
    ephpm_kv_set('bench:k', $v);
    apcu_store('bench:k', $v);
    $ops = [
        'get' => [
            'ephpm' => function (int $n) { for ($i = 0; $i < $n; $i++) { ephpm_kv_get('bench:k'); } },
            'apcu' => function (int $n) { for ($i = 0; $i < $n; $i++) { apcu_fetch('bench:k'); } },
        ],
        'set' => [
            'ephpm' => function (int $n) use ($v) { for ($i = 0; $i < $n; $i++) { ephpm_kv_set('bench:k', $v); } },
            'apcu' => function (int $n) use ($v) { for ($i = 0; $i < $n; $i++) { apcu_store('bench:k', $v); } },
        ],
    ];
    if ($size === 64) {
        $ops['lock pair'] = [
            'ephpm' => function (int $n) use ($token) {
                for ($i = 0; $i < $n; $i++) {
                    ephpm_kv_setnx('bench:l', $token, 30);
                    ephpm_kv_del_if_eq('bench:l', $token);
                }
            },
            'apcu' => function (int $n) use ($token) {
                for ($i = 0; $i < $n; $i++) {
                    apcu_add('bench:l', $token, 30);
                    apcu_delete('bench:l');
                }
            },
        ];
    }
    foreach ($ops as $op => $fs) {
        $t = measure_all($fs, 100_000, 7);
        $rows[] = [$op, $label, $t['ephpm'], $t['apcu'], $t['ephpm'] / $t['apcu']];
    }
}

printf("%-10s %-7s %10s %10s %8s\n", 'op', 'value', 'ephpm shm', 'APCu', 'ratio');
foreach ($rows as [$op, $label, $te, $ta, $ratio]) {
    printf("%-10s %-7s %7.0f ns %7.0f ns %7.2fx\n", $op, $label, $te, $ta, $ratio);
}
printf("\n%d processes at once, %g s, 8 gets + 1 set + 1 lock pair per step on 1000 keys of 64 B (each round, then the median of %d):\n",
    $procs, $seconds, count($hammered['ephpm']));
foreach ($hammered['ephpm'] as $r => $e) {
    printf("  round %d: ephpm shm %.2f M ops/s, APCu %.2f M ops/s, ratio %.2fx\n", $r + 1, $e / 1e6,
        $hammered['apcu'][$r] / 1e6, $e / $hammered['apcu'][$r]);
}
sort($hammered['ephpm']);
sort($hammered['apcu']);
$mid = intdiv(count($hammered['ephpm']), 2);
printf("  ephpm shm %.2f M ops/s, APCu %.2f M ops/s, ratio %.2fx (higher is better)\n",
    $hammered['ephpm'][$mid] / 1e6, $hammered['apcu'][$mid] / 1e6, $hammered['ephpm'][$mid] / $hammered['apcu'][$mid]);
printf("\nPHP %s, %s, backend %s; ratio = ephpm / APCu.\n", PHP_VERSION, php_uname('m'), ephpm_kv_stats()['backend']);
