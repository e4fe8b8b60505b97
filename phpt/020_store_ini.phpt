--TEST--
ephpm.kv_* settings: defaults, and a bad value warns at startup and keeps the default
--EXTENSIONS--
ephpm
--SKIPIF--
<?php if (ini_get('ephpm.kv_backend') !== 'memory') die('skip the in-process store only'); ?>
--FILE--
<?php
foreach (['ephpm.kv_memory_limit', 'ephpm.kv_eviction', 'ephpm.kv_compression', 'ephpm.kv_compression_min_size'] as $k) {
    echo "$k=", ini_get($k), "\n";
}
var_dump(ini_set('ephpm.kv_eviction', 'allkeys-lru'));     // PHP_INI_SYSTEM: not at run time
require __DIR__ . '/inc/child.inc';
$code = 'echo ini_get("ephpm.kv_eviction"), " ", ini_get("ephpm.kv_compression"), " ", ephpm_kv_stats()["memory_limit"], "\n";';
echo ephpm_child($code, ['ephpm.kv_eviction' => 'lfu', 'ephpm.kv_compression' => 'zstd', 'ephpm.kv_memory_limit' => '-1']);
echo ephpm_child($code, ['ephpm.kv_eviction' => 'volatile-lru', 'ephpm.kv_compression' => 'lz4', 'ephpm.kv_memory_limit' => '1G']);
?>
--EXPECTF--
ephpm.kv_memory_limit=64M
ephpm.kv_eviction=noeviction
ephpm.kv_compression=none
ephpm.kv_compression_min_size=1024
bool(false)
%AWarning: PHP Startup: ephpm.kv_memory_limit must be between 0 and 9223372036854775807 bytes, "-1" given in Unknown on line 0
%AWarning: PHP Startup: ephpm.kv_eviction must be one of noeviction, volatile-lru, allkeys-lru, "lfu" given in Unknown on line 0
%AWarning: PHP Startup: ephpm.kv_compression must be one of none, lz4, "zstd" given in Unknown on line 0
%Anoeviction none 67108864
volatile-lru lz4 1073741824
