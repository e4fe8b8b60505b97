--TEST--
ephpm.kv_compression=lz4: values round-trip, are stored smaller, and compare on their logical value
--EXTENSIONS--
ephpm
--INI--
ephpm.kv_compression=lz4
ephpm.kv_compression_min_size=1024
--SKIPIF--
<?php if (ephpm_kv_stats()['backend'] !== 'memory') die('skip the in-process store only'); ?>
--FILE--
<?php
$big = str_repeat('a compressible line of text ', 2000);   // 56 000 bytes
$before = ephpm_kv_stats()['bytes_used'];
ephpm_kv_set('t19:big', $big);
$used = ephpm_kv_stats()['bytes_used'] - $before;
var_dump(ephpm_kv_stats()['compression'], $used < strlen($big) / 10);
var_dump(ephpm_kv_get('t19:big') === $big);
var_dump(ephpm_kv_del_if_eq('t19:big', substr($big, 1)));
var_dump(ephpm_kv_del_if_eq('t19:big', $big));
$small = str_repeat('s', 1000);                           // under the minimum
ephpm_kv_set('t19:small', $small);
var_dump(ephpm_kv_get('t19:small') === $small);
$noise = random_bytes(5000);                               // not smaller compressed
ephpm_kv_set('t19:noise', $noise);
var_dump(ephpm_kv_get('t19:noise') === $noise);
?>
--EXPECT--
string(3) "lz4"
bool(true)
bool(true)
bool(false)
bool(true)
bool(true)
bool(true)
