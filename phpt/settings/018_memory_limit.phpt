--TEST--
ephpm.kv_memory_limit: noeviction fails with OUT_OF_MEMORY and keeps the old value; allkeys-lru evicts but never locks or sessions
--EXTENSIONS--
ephpm
--INI--
ephpm.kv_memory_limit=64K
ephpm.kv_eviction=noeviction
--SKIPIF--
<?php if (ephpm_kv_stats()['backend'] !== 'memory') die('skip the in-process store only'); ?>
--FILE--
<?php
$v = str_repeat('v', 1000);
ephpm_kv_set('t18:keep', 'old');
try {
    for ($i = 0; $i < 1000; $i++) {
        ephpm_kv_set("t18:$i", $v);
    }
    echo "never full\n";
} catch (Ephpm\KvException $e) {
    var_dump($e->getCode() === Ephpm\KvException::OUT_OF_MEMORY, $i > 50, $e->getMessage());
}
try {
    ephpm_kv_set('t18:keep', $v . $v);   // grows by more than any room left
} catch (Ephpm\KvException $e) {
    echo $e->getMessage(), "\n";
}
var_dump(ephpm_kv_get('t18:keep'));
$s = ephpm_kv_stats();
var_dump($s['memory_limit'], $s['bytes_used'] <= 65536, $s['evictions']);

// The same store under allkeys-lru, in a child process of its own.
require __DIR__ . '/../inc/child.inc';
echo ephpm_child(<<<'PHP'
    $v = str_repeat('v', 1000);
    $lock = ephpm_kv_lock('lock:a', 60);
    ephpm_kv_set('session:abc', 'data');
    for ($i = 0; $i < 1000; $i++) {
        ephpm_kv_set("k$i", $v);
    }
    $s = ephpm_kv_stats();
    echo $s['eviction'], ' evictions>0:', var_export($s['evictions'] > 0, true),
        ' within limit:', var_export($s['bytes_used'] <= $s['memory_limit'], true),
        ' lock kept:', var_export(ephpm_kv_get('lock:a') === $lock, true),
        ' session kept:', var_export(ephpm_kv_get('session:abc') === 'data', true),
        ' newest kept:', var_export(ephpm_kv_get('k999') === $v, true), "\n";
    PHP, ['ephpm.kv_eviction' => 'allkeys-lru']);
?>
--EXPECTF--
bool(true)
bool(true)
string(%d) "ephpm_kv_set(): the store is out of memory; nothing was written (kv: out of memory)"
ephpm_kv_set(): the store is out of memory; nothing was written (kv: out of memory)
string(3) "old"
int(65536)
bool(true)
int(0)
allkeys-lru evictions>0:true within limit:true lock kept:true session kept:true newest kept:true
