--TEST--
shared-memory store: ephpm_kv_stats() counts the processes attached to the segment, and they share its entries
--EXTENSIONS--
ephpm
--SKIPIF--
<?php if (!str_starts_with(ini_get('ephpm.kv_backend'), 'shm')) die('skip the shared-memory store only'); ?>
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
$s = ephpm_kv_stats();
var_dump($s['backend'], $s['processes'] >= 1);
ephpm_kv_set('t29:k', 'from the parent');
// A second process sees the entry and counts itself with this one.
$child = ephpm_child('$s = ephpm_kv_stats(); echo ephpm_kv_get("t29:k"), " ", $s["processes"] >= 2 ? "two or more" : $s["processes"];',
    ['ephpm.kv_backend' => ini_get('ephpm.kv_backend')]);
echo trim($child), "\n";
ephpm_kv_del('t29:k');
?>
--EXPECT--
string(3) "shm"
bool(true)
from the parent two or more
