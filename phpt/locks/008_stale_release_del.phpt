--TEST--
Stale release with ephpm_kv_del: A's late blind delete removes B's lock and C gets in (examples/lock.php)
--EXTENSIONS--
ephpm
--FILE--
<?php
$_GET['release'] = 'del';
require __DIR__ . '/../../examples/lock.php';
?>
--EXPECT--
A acquires (1s TTL):     true
B acquires (30s TTL):    true
A releases with del:     1
C tries to acquire:      true
lock holder now:         'C'
