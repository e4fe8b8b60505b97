--TEST--
Stale release with ephpm_kv_del_if_eq: A's late release is a no-op, C is refused, B still holds (examples/lock.php)
--EXTENSIONS--
ephpm
--FILE--
<?php
$_GET['release'] = 'del_if_eq';
require __DIR__ . '/../../examples/lock.php';
?>
--EXPECT--
A acquires (1s TTL):     true
B acquires (30s TTL):    true
A releases with del_if_eq: false
C tries to acquire:      false
lock holder now:         'B'
