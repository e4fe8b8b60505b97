--TEST--
shared-memory segment: a value of more than half a shard's heap is written, but rewriting it while it is there is refused with an error that says why (the old and the new entry must fit at once); the old value stays, and it can be replaced once deleted
--EXTENSIONS--
ephpm
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
require __DIR__ . '/../inc/segment.inc';
echo ephpm_child(<<<'PHP'
    $a = random_bytes(1536 << 10); // incompressible, 1.5 MiB: a 64 MiB segment's shard heap is 2.5 MiB
    $b = random_bytes(1536 << 10);
    var_dump(ephpm_kv_set('big', $a));
    try {
        ephpm_kv_set('big', $b);
        echo "rewritten\n";
    } catch (Ephpm\KvException $e) {
        echo preg_replace('/\d+ bytes/', 'N bytes', $e->getMessage()), "\n";
    }
    var_dump(ephpm_kv_get('big') === $a);
    var_dump(ephpm_kv_del('big'), ephpm_kv_set('big', $b), ephpm_kv_get('big') === $b);
    PHP, ['ephpm.kv_backend' => 'shm://' . ephpm_test_segment('k070'), 'ephpm.kv_memory_limit' => '64M', 'ephpm.kv_compression' => 'none']);
?>
--CLEAN--
<?php
require __DIR__ . '/../inc/segment.inc';
ephpm_remove_test_segments('k070');
?>
--EXPECTF--
bool(true)
%Sephpm_kv_set(): %sout of memory: an entry of N bytes cannot replace the key's entry of N bytes: a shard's heap (N bytes) holds both while the new one is written (delete the key first, or keep such values under half of that)%S
bool(true)
int(1)
bool(true)
bool(true)
