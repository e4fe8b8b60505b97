--TEST--
ephpm: a value of exactly 256 MiB, the largest, is stored and read back
--EXTENSIONS--
ephpm
--SKIPIF--
<?php if (str_starts_with(ini_get('ephpm.kv_backend'), 'shm')) die("skip the shared-memory store holds entries up to a shard's heap"); ?>
--INI--
memory_limit=-1
ephpm.kv_memory_limit=0
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
$code = '$big = str_repeat("x", 256 * 1024 * 1024);
var_dump(ephpm_kv_set("t25:big", $big), strlen(ephpm_kv_get("t25:big")));
ephpm_kv_del("t25:big");';
$backend = ini_get('ephpm.kv_backend');
if (str_starts_with($backend, 'redis')) {
    // 256 MiB to Redis and back take seconds on a loaded host, past
    // go-redis's 3 s read and write timeouts (an unknown outcome, rightly
    // an error): this one call gets a minute each.
    $backend .= (str_contains($backend, '?') ? '&' : '?') . 'read_timeout=60s&write_timeout=60s';
    echo ephpm_child($code, ['memory_limit' => '-1', 'ephpm.kv_memory_limit' => '0', 'ephpm.kv_backend' => "\"$backend\""]);
} else {
    eval($code);
}
?>
--EXPECT--
bool(true)
int(268435456)
