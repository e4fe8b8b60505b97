--TEST--
ephpm: extension loaded, functions and exception class registered, library loaded lazily
--EXTENSIONS--
ephpm
--FILE--
<?php
foreach (['ephpm_kv_get', 'ephpm_kv_set', 'ephpm_kv_setnx', 'ephpm_kv_del', 'ephpm_kv_del_if_eq', 'ephpm_kv_exists',
          'ephpm_kv_ttl', 'ephpm_kv_pttl', 'ephpm_kv_expire', 'ephpm_kv_expire_if_eq', 'ephpm_kv_incr', 'ephpm_kv_decr',
          'ephpm_kv_incr_by', 'ephpm_kv_flush_all', 'ephpm_kv_stats', 'ephpm_kv_lock', 'ephpm_kv_unlock'] as $f) {
    echo $f, ': ', function_exists($f) ? 'yes' : 'no', "\n";
}
$rc = new ReflectionClass(Ephpm\KvException::class);
echo get_parent_class(Ephpm\KvException::class), "\n";
var_dump($rc->getConstants());

$threads = fn () => count(glob('/proc/self/task/*'));
echo "threads before first use: ", $threads(), "\n";
ephpm_kv_get('x');
echo "threads after first use > 1: ", var_export($threads() > 1, true), "\n";
?>
--EXPECT--
ephpm_kv_get: yes
ephpm_kv_set: yes
ephpm_kv_setnx: yes
ephpm_kv_del: yes
ephpm_kv_del_if_eq: yes
ephpm_kv_exists: yes
ephpm_kv_ttl: yes
ephpm_kv_pttl: yes
ephpm_kv_expire: yes
ephpm_kv_expire_if_eq: yes
ephpm_kv_incr: yes
ephpm_kv_decr: yes
ephpm_kv_incr_by: yes
ephpm_kv_flush_all: yes
ephpm_kv_stats: yes
ephpm_kv_lock: yes
ephpm_kv_unlock: yes
RuntimeException
array(8) {
  ["OUT_OF_MEMORY"]=>
  int(1)
  ["UNAVAILABLE"]=>
  int(2)
  ["INVALID_ARGUMENT"]=>
  int(3)
  ["FORKED"]=>
  int(4)
  ["NOT_LOADED"]=>
  int(5)
  ["UNSUPPORTED"]=>
  int(6)
  ["NOT_INTEGER"]=>
  int(7)
  ["OVERFLOW"]=>
  int(8)
}
threads before first use: 1
threads after first use > 1: true
