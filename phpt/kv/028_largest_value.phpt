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
$big = str_repeat('x', 256 * 1024 * 1024);
var_dump(ephpm_kv_set('t25:big', $big), strlen(ephpm_kv_get('t25:big')));
ephpm_kv_del('t25:big');
?>
--EXPECT--
bool(true)
int(268435456)
