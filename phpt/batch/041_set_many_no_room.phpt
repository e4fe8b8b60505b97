--TEST--
ephpm_kv_set_many: a batch that does not fit throws OUT_OF_MEMORY naming the key that failed; the entries before it are stored, it keeps its old value, nothing after it is written
--EXTENSIONS--
ephpm
--INI--
ephpm.kv_memory_limit=1M
ephpm.kv_eviction=noeviction
--SKIPIF--
<?php if (ephpm_kv_stats()['backend'] !== 'memory') die('skip the in-process store only'); ?>
--FILE--
<?php
ephpm_kv_set('t41:big', 'old');
try {
    ephpm_kv_set_many(['t41:a' => '1', 't41:big' => str_repeat('x', 2 << 20), 't41:c' => '3']);
    echo "stored\n";
} catch (Ephpm\KvException $e) {
    var_dump($e->getCode() === Ephpm\KvException::OUT_OF_MEMORY);
    echo $e->getMessage(), "\n";
}
var_dump(ephpm_kv_get_many(['t41:a', 't41:big', 't41:c']));
?>
--EXPECTF--
bool(true)
ephpm_kv_set_many(): entry 2 of 3 was not stored, the 1 before it were: the store is out of memory; nothing was written (key "t41:big": %s)
array(2) {
  ["t41:a"]=>
  string(1) "1"
  ["t41:big"]=>
  string(3) "old"
}
