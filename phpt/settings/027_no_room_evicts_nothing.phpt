--TEST--
ephpm.kv_eviction=allkeys-lru: a write that eviction cannot make fit fails with OUT_OF_MEMORY at once and evicts nothing
--EXTENSIONS--
ephpm
--INI--
ephpm.kv_memory_limit=1M
ephpm.kv_eviction=allkeys-lru
--SKIPIF--
<?php if (ephpm_kv_stats()['backend'] !== 'memory') die('skip the in-process store only'); ?>
--FILE--
<?php
function attempt(string $key, int $bytes): void {
    try {
        ephpm_kv_set($key, str_repeat('B', $bytes));
        echo "$key: stored\n";
    } catch (Ephpm\KvException $e) {
        echo "$key: ", $e->getCode() === Ephpm\KvException::OUT_OF_MEMORY ? 'OUT_OF_MEMORY' : $e->getMessage(), "\n";
    }
}
for ($i = 0; $i < 300; $i++) {
    ephpm_kv_set("t24:c$i", str_repeat('c', 1000));
}
attempt('t24:larger-than-the-limit', 2 << 20);
$s = ephpm_kv_stats();
echo "keys {$s['keys']}, evictions {$s['evictions']}\n";

// 750 KB of locks (never evicted) leave too little to evict for 300 KB.
// Their TTL is an hour: no run, however slow (valgrind), sees one expire.
ephpm_kv_flush_all();
for ($i = 0; $i < 750; $i++) {
    ephpm_kv_setnx("t24:lock$i", str_repeat('l', 1000), 3600);
}
for ($i = 0; $i < 200; $i++) {
    ephpm_kv_set("t24:c$i", str_repeat('c', 1000));
}
attempt('t24:beside-the-locks', 300 << 10);
$s = ephpm_kv_stats();
echo "keys {$s['keys']}, evictions {$s['evictions']}\n";

// One that eviction can make fit still evicts, and only cache entries.
attempt('t24:fits-after-eviction', 150 << 10);
$s = ephpm_kv_stats();
$locks = 0;
for ($i = 0; $i < 750; $i++) {
    $locks += ephpm_kv_exists("t24:lock$i");
}
var_dump($s['evictions'] > 0, $s['bytes_used'] <= $s['memory_limit'], $locks);
?>
--EXPECT--
t24:larger-than-the-limit: OUT_OF_MEMORY
keys 300, evictions 0
t24:beside-the-locks: OUT_OF_MEMORY
keys 950, evictions 0
t24:fits-after-eviction: stored
bool(true)
bool(true)
int(750)
