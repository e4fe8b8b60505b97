<?php
/*
 * Batches against APCu's, one run, side by side: ns per key of a batch of
 * 100 keys of 64 B, read with ephpm_kv_get_many against apcu_fetch(array)
 * and written with ephpm_kv_set_many against apcu_store(array), and the same
 * 100 keys one call each, for scale. Run by bench/run.sh.
 *
 * Usage: php -d extension=ephpm.so -d apc.enable_cli=1 batch_bench.php
 */
declare(strict_types=1);

if (!function_exists('apcu_fetch') || !apcu_enabled()) {
    fwrite(STDERR, "APCu is not enabled (apc.enable_cli=1)\n");
    exit(1);
}
require __DIR__ . '/measure.php';

const KEYS = 100;
$values = [];
for ($i = 0; $i < KEYS; $i++) {
    $values["bench:batch:$i"] = str_repeat(chr(97 + $i % 26), 64);
}
$keys = array_keys($values);
ephpm_kv_set_many($values);
apcu_store($values);
if (ephpm_kv_get_many($keys) !== $values || apcu_fetch($keys) !== $values) {
    fwrite(STDERR, "the batches do not read back\n");
    exit(1);
}

$ns = measure_all([
    'get_many' => function (int $n) use ($keys) { for ($i = 0; $i < $n; $i++) { ephpm_kv_get_many($keys); } },
    'apcu_fetch(array)' => function (int $n) use ($keys) { for ($i = 0; $i < $n; $i++) { apcu_fetch($keys); } },
    'set_many' => function (int $n) use ($values) { for ($i = 0; $i < $n; $i++) { ephpm_kv_set_many($values); } },
    'apcu_store(array)' => function (int $n) use ($values) { for ($i = 0; $i < $n; $i++) { apcu_store($values); } },
    'get x100' => function (int $n) use ($keys) { for ($i = 0; $i < $n; $i++) { foreach ($keys as $k) { ephpm_kv_get($k); } } },
    'apcu_fetch x100' => function (int $n) use ($keys) { for ($i = 0; $i < $n; $i++) { foreach ($keys as $k) { apcu_fetch($k); } } },
    'set x100' => function (int $n) use ($values) { for ($i = 0; $i < $n; $i++) { foreach ($values as $k => $v) { ephpm_kv_set($k, $v); } } },
    'apcu_store x100' => function (int $n) use ($values) { for ($i = 0; $i < $n; $i++) { foreach ($values as $k => $v) { apcu_store($k, $v); } } },
], 5_000, 7);

printf("%-18s %12s %10s\n", 'batch of 100 x 64 B', 'ns per key', 'ratio');
foreach ([['get_many', 'apcu_fetch(array)'], ['set_many', 'apcu_store(array)'], ['get x100', 'apcu_fetch x100'], ['set x100', 'apcu_store x100']] as [$e, $a]) {
    printf("%-18s %12.1f\n%-18s %12.1f %9.2fx\n", $e, $ns[$e] / KEYS, $a, $ns[$a] / KEYS, $ns[$e] / $ns[$a]);
}
printf("\nPHP %s, %s; ns per key = best of 7 alternating rounds / 100; ratio = ephpm / APCu.\n", PHP_VERSION, php_uname('m'));
