--TEST--
ephpm: phpinfo() section shows the ABI version, whether the library is loaded, and the store's figures
--EXTENSIONS--
ephpm
--INI--
ephpm.library=
--SKIPIF--
<?php if (ephpm_kv_stats()['backend'] !== 'memory') die('skip the in-process store only'); ?>
--FILE--
<?php
function section(): string {
    ob_start();
    phpinfo(INFO_MODULES);
    $all = ob_get_clean();
    $start = strpos($all, "\nephpm\n");
    return substr($all, $start, strpos($all, "Directive", $start) - $start);
}
echo section();
ephpm_kv_get('t10:any');
echo preg_replace('~^Library => /.*/libephpm\.so$~m', 'Library => [path]/libephpm.so', section());
// The figures are ephpm_kv_stats()'s.
$st = ephpm_kv_stats();
foreach (['instance_id', 'keys', 'misses', 'memory_limit'] as $k) {
    echo $k, ': ', str_contains(section(), "$k => {$st[$k]}\n") ? 'same' : 'DIFFERENT', "\n";
}
?>
--EXPECTF--
ephpm

ephpm support => enabled
Extension version => 0.1.0
ABI version (extension) => 1
Library loaded => no (loaded on first use in each process)


ephpm

ephpm support => enabled
Extension version => 0.1.0
ABI version (extension) => 1
Library loaded => yes
Library => [path]/libephpm.so
ABI version (library) => 1 (table of %d bytes)
instance_id => %x-%x-%x-%x-%x
backend => memory
pid => %d
eviction => noeviction
compression => none
keys => 0
bytes_used => 0
memory_limit => 67108864
hits => 0
misses => 1
sets => 0
evictions => 0
expirations => 0
set_nx_wins => 0
set_nx_losses => 0
del_if_eq_matches => 0
del_if_eq_mismatches => 0
lock_timeouts => 0
session_bytes => 0
session_limit => 33554432
processes => 0
store => memory, this process's own (default: cli runs in one process)

instance_id: same
keys: same
misses: same
memory_limit: same
