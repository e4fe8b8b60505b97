--TEST--
ephpm.kv_* settings: defaults; the library parses them, and refuses a bad value at load, naming the setting
--EXTENSIONS--
ephpm
--SKIPIF--
<?php if (ephpm_kv_stats()['backend'] !== 'memory') die('skip the in-process store only'); ?>
--FILE--
<?php
foreach (['ephpm.kv_memory_limit', 'ephpm.kv_eviction', 'ephpm.kv_compression', 'ephpm.kv_compression_min_size', 'ephpm.kv_backend'] as $k) {
    echo "$k=", ini_get($k), "\n";
}
var_dump(ini_set('ephpm.kv_eviction', 'allkeys-lru'));     // PHP_INI_SYSTEM: not at run time
require __DIR__ . '/../inc/child.inc';
$code = 'try { $st = ephpm_kv_stats(); echo ini_get("ephpm.kv_eviction"), " ", $st["eviction"], " ", $st["compression"], " ", $st["memory_limit"], "\n"; }'
      . ' catch (Ephpm\KvException $e) { echo preg_replace("~library /\S+~", "library [path]", $e->getMessage()), "\n"; }';
foreach ([['ephpm.kv_eviction' => 'lfu'], ['ephpm.kv_eviction' => 'ALLKEYS-LRU'], ['ephpm.kv_compression' => 'zstd'],
          ['ephpm.kv_memory_limit' => '-1'], ['ephpm.kv_compression_min_size' => '1G']] as $bad) {
    echo ephpm_child($code, $bad);
}
echo ephpm_child($code, ['ephpm.kv_eviction' => 'volatile-lru', 'ephpm.kv_compression' => 'lz4', 'ephpm.kv_memory_limit' => '1G']);
echo ephpm_child($code, ['ephpm.kv_memory_limit' => '512k']);
?>
--EXPECTF--
ephpm.kv_memory_limit=64M
ephpm.kv_eviction=noeviction
ephpm.kv_compression=none
ephpm.kv_compression_min_size=1024
ephpm.kv_backend=auto
bool(false)
ephpm: the library [path] refused ephpm.kv_eviction: kv: invalid argument: eviction policy "lfu" is not noeviction, volatile-lru or allkeys-lru
ephpm: the library [path] refused ephpm.kv_eviction: kv: invalid argument: eviction policy "ALLKEYS-LRU" is not noeviction, volatile-lru or allkeys-lru
ephpm: the library [path] refused ephpm.kv_compression: kv: invalid argument: compression "zstd" is not none or lz4
ephpm: the library [path] refused ephpm.kv_memory_limit: kv: invalid argument: "-1" is not a number between 0 and 9223372036854775807 (K, M and G suffixes allowed)
ephpm: the library [path] refused ephpm.kv_compression_min_size: kv: invalid argument: "1G" is not a number between 0 and %d (K, M and G suffixes allowed)
volatile-lru volatile-lru lz4 1073741824
noeviction noeviction none 524288
