--TEST--
ephpm_kv_lock_info says who holds a name (null, exclusive with 1 holder, shared with the number of readers); ephpm_kv_lock_release_all removes every holder at once
--EXTENSIONS--
ephpm
--FILE--
<?php
$n = 't52:doc';
var_dump(ephpm_kv_lock_info($n), ephpm_kv_lock_release_all($n));     // free: null, nothing to release
$readers = [];
for ($i = 0; $i < 5; $i++) {
    $readers[] = ephpm_kv_lock_read($n, 30);
}
var_dump(ephpm_kv_lock_info($n));
var_dump(ephpm_kv_lock_release_all($n), ephpm_kv_lock_info($n));
var_dump(ephpm_kv_unlock($n, $readers[0]));                          // its hold went with the others

$w = ephpm_kv_lock($n, 30);
var_dump(ephpm_kv_lock_info($n), ephpm_kv_lock_release_all($n), ephpm_kv_unlock($n, $w));
ephpm_kv_setnx($n, 'a set_nx lock');                                 // any other entry holds it exclusively
var_dump(ephpm_kv_lock_info($n)['mode'], ephpm_kv_lock_release_all($n));
try {
    ephpm_kv_lock_info('');
} catch (ValueError $e) {
    echo $e->getMessage(), "\n";
}
try {
    ephpm_kv_lock_release_all('');
} catch (ValueError $e) {
    echo $e->getMessage(), "\n";
}
?>
--EXPECT--
NULL
bool(false)
array(2) {
  ["mode"]=>
  string(6) "shared"
  ["holders"]=>
  int(5)
}
bool(true)
NULL
bool(false)
array(2) {
  ["mode"]=>
  string(9) "exclusive"
  ["holders"]=>
  int(1)
}
bool(true)
bool(false)
string(9) "exclusive"
bool(true)
ephpm_kv_lock_info(): Argument #1 ($name) must not be empty
ephpm_kv_lock_release_all(): Argument #1 ($name) must not be empty
