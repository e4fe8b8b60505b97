<?php
/*
 * The engines against each other and APCu, one run (issue 27 item 2): ns
 * per get (hit) and set of 64 B and 4 KiB, and per lock pair (set_nx with a
 * TTL of 30 s, del_if_eq), for each store a process can be given, with
 * APCu measured beside each. A process serves one backend, so this parent
 * runs a child per store per round, the stores in turn, ROUNDS times (a
 * slow spell of a shared host falls on all alike); each child times its
 * store and APCu side by side (best of 3 rounds of N), and the figure is
 * the best over every round. The parent never loads the library.
 *
 * Usage: php engines_bench.php EPHPM_SO [ROUNDS [N]]
 *   ENGINES (environment): space-separated NAME=INI pairs, each the
 *   ephpm.kv_backend setting and the environment of one store, e.g.
 *   "memory=memory shm=shm://bench-engines"; a NAME=INI@VAR=VALUE entry
 *   runs its child with VAR=VALUE in its environment. Default: the
 *   in-process store and a shared-memory segment.
 */
declare(strict_types=1);

if (($argv[1] ?? '') === '--child') {
    child((int) $argv[2]);
    exit(0);
}

[$_, $so, $rounds, $n] = $argv + [null, null, 5, 100_000];
if ($so === null) {
    fwrite(STDERR, "usage: php engines_bench.php EPHPM_SO [ROUNDS [N]]\n");
    exit(2);
}
$segment = 'bench-engines-' . getmypid();
$engines = [];
foreach (preg_split('/\s+/', trim(getenv('ENGINES') ?: "memory=memory shm=shm://$segment")) as $spec) {
    [$name, $rest] = explode('=', $spec, 2);
    [$ini, $env] = array_pad(explode('@', $rest, 2), 2, null);
    $engines[$name] = [$ini, $env];
}

$best = [];
$stores = [];
for ($r = 0; $r < (int) $rounds; $r++) {
    foreach ($engines as $name => [$ini, $env]) {
        $cmd = ($env !== null ? 'env ' . escapeshellarg($env) . ' ' : '')
            . escapeshellarg(PHP_BINARY)
            . ' -d ' . escapeshellarg("extension=$so") . ' -d apc.enable_cli=1 -d apc.shm_size=256M'
            . ' -d ephpm.kv_memory_limit=256M -d ' . escapeshellarg("ephpm.kv_backend=$ini")
            . ' ' . escapeshellarg(__FILE__) . ' --child ' . (int) $n;
        $out = shell_exec($cmd);
        $res = json_decode((string) $out, true);
        if (!is_array($res)) {
            fwrite(STDERR, "child $name failed: $out\n");
            exit(1);
        }
        $stores[$name] = $res['store'];
        foreach ($res['ns'] as $op => $byWho) {
            foreach ($byWho as $who => $ns) {
                $col = $who === 'apcu' ? 'APCu' : $name;
                $best[$op][$col] = min($best[$op][$col] ?? INF, $ns);
            }
        }
    }
}
// The segments this run made (a segment outlives its processes).
foreach ($engines as [$ini, $_]) {
    if (str_starts_with($ini, 'shm://')) {
        foreach (glob('/dev/shm/ephpm-' . substr($ini, 6) . '.' . posix_geteuid() . '*') as $f) {
            unlink($f);
        }
    }
}

$cols = array_merge(array_keys($engines), ['APCu']);
printf("%-14s", 'ns per op');
foreach ($cols as $c) {
    printf(" %10s", $c);
}
echo "\n";
foreach ($best as $op => $row) {
    printf("%-14s", $op);
    foreach ($cols as $c) {
        printf(" %10.1f", $row[$c]);
    }
    echo "\n";
}
echo "\nbest of $rounds alternating rounds (each best of 3 rounds of $n, APCu beside each store); PHP " . PHP_VERSION . "\n";
foreach ($stores as $name => $s) {
    echo "$name: $s\n";
}

function child(int $n): void
{
    require __DIR__ . '/measure.php';
    $token = bin2hex(random_bytes(16));
    $ns = [];
    foreach ([64 => '64B', 4096 => '4KiB'] as $size => $label) {
        $v = str_repeat('v', $size);
        ephpm_kv_set('bench:k', $v);
        apcu_store('bench:k', $v);
        $ns["get $label"] = measure_all([
            'ephpm' => function (int $n) { for ($i = 0; $i < $n; $i++) { ephpm_kv_get('bench:k'); } },
            'apcu' => function (int $n) { for ($i = 0; $i < $n; $i++) { apcu_fetch('bench:k'); } },
        ], $n, 3);
        $ns["set $label"] = measure_all([
            'ephpm' => function (int $n) use ($v) { for ($i = 0; $i < $n; $i++) { ephpm_kv_set('bench:k', $v); } },
            'apcu' => function (int $n) use ($v) { for ($i = 0; $i < $n; $i++) { apcu_store('bench:k', $v); } },
        ], $n, 3);
    }
    $ns['lock pair'] = measure_all([
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
    ], $n, 3);
    echo json_encode(['ns' => $ns, 'store' => ephpm_kv_stats()['store']]);
}
