--TEST--
ephpm_kv_lock(bound: true): a lock like any other while its process lives, in the same fence sequence; not for read holds
--EXTENSIONS--
ephpm
--FILE--
<?php
$t = ephpm_kv_lock('t55:lock', 60, 0.0, null, $f1);
var_dump(ephpm_kv_unlock('t55:lock', $t));
$t = ephpm_kv_lock('t55:lock', 60, 0.0, null, $f2, true);
var_dump(strlen($t), $f2 > $f1);
var_dump(ephpm_kv_lock('t55:lock', 60), ephpm_kv_lock('t55:lock', 60, bound: true), ephpm_kv_lock_read('t55:lock', 60));
var_dump(ephpm_kv_lock_info('t55:lock'));
var_dump(ephpm_kv_lock_refresh('t55:lock', $t, 120), ephpm_kv_pttl('t55:lock') > 0);
var_dump(ephpm_kv_unlock('t55:lock', $t), ephpm_kv_lock_info('t55:lock'));
$own = ephpm_kv_lock('t55:lock', 60, token: 'owner-55', bound: true);
var_dump($own, ephpm_kv_del_if_eq('t55:lock', 'owner-55'));
$r = ephpm_kv_lock_read('t55:lock', 60);
var_dump(ephpm_kv_lock('t55:lock', 60, bound: true), ephpm_kv_unlock('t55:lock', $r));
try {
    ephpm_kv_lock_read('t55:lock', 60, 0.0, null, $f, true);
} catch (ArgumentCountError $e) {
    echo get_class($e), ': ', $e->getMessage(), "\n";
}
try {
    ephpm_kv_lock_read('t55:lock', 60, bound: true);
} catch (Error $e) {
    echo get_class($e), ': ', $e->getMessage(), "\n";
}
?>
--EXPECT--
bool(true)
int(32)
bool(true)
bool(false)
bool(false)
bool(false)
array(2) {
  ["mode"]=>
  string(9) "exclusive"
  ["holders"]=>
  int(1)
}
bool(true)
bool(true)
bool(true)
NULL
string(8) "owner-55"
bool(true)
bool(false)
bool(true)
ArgumentCountError: ephpm_kv_lock_read() expects at most 5 arguments, 6 given
Error: Unknown named parameter $bound
