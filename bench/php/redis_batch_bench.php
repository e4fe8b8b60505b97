<?php
/*
 * Batches on the Redis backend: µs per batch of 100 keys of 64 B, with
 * get_many/set_many (one pipeline: one round trip per server) against 100
 * single calls (100 round trips). Run by bench/run.sh; by hand:
 *   tests/with-redis.sh standalone|cluster php -n -d extension=build/modules/ephpm.so \
 *       -d ephpm.kv_backend=@BACKEND@ bench/php/redis_batch_bench.php
 */
declare(strict_types=1);

require __DIR__ . '/measure.php';

$values = [];
for ($i = 0; $i < 100; $i++) { $values["bench:batch:$i"] = str_repeat('v', 64); }
$keys = array_keys($values);
ephpm_kv_set_many($values);
$r = measure_all([
    'get_many(100)' => function ($n) use ($keys) { for ($i = 0; $i < $n; $i++) ephpm_kv_get_many($keys); },
    'get x100' => function ($n) use ($keys) { for ($i = 0; $i < $n; $i++) foreach ($keys as $k) ephpm_kv_get($k); },
    'set_many(100)' => function ($n) use ($values) { for ($i = 0; $i < $n; $i++) ephpm_kv_set_many($values); },
    'set x100' => function ($n) use ($values) { for ($i = 0; $i < $n; $i++) foreach ($values as $k => $v) ephpm_kv_set($k, $v); },
], 200, 7, 'median');
foreach ($r as $k => $ns) printf("%-15s %8.1f us per batch\n", $k, $ns / 1000);
echo "median of 7 alternating rounds of 200 batches\n";
