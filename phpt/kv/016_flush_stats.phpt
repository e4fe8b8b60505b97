--TEST--
ephpm_kv_stats counts what the store did; ephpm_kv_flush_all empties it
--EXTENSIONS--
ephpm
--SKIPIF--
<?php if (ephpm_kv_stats()['backend'] !== 'memory') die('skip the in-process store only'); ?>
--FILE--
<?php
$before = ephpm_kv_stats();
ephpm_kv_set('t16:a', 'v');
ephpm_kv_get('t16:a');
ephpm_kv_get('t16:missing');
ephpm_kv_setnx('t16:l', 't');
ephpm_kv_setnx('t16:l', 'u');
ephpm_kv_del_if_eq('t16:l', 'u');
ephpm_kv_del_if_eq('t16:l', 't');
var_dump(ephpm_kv_lock('t16:held', 30) !== false, ephpm_kv_lock('t16:held', 30, 0.05));
$after = ephpm_kv_stats();
foreach (['sets', 'hits', 'misses', 'set_nx_wins', 'del_if_eq_matches', 'del_if_eq_mismatches', 'lock_timeouts'] as $k) {
    echo "$k +", $after[$k] - $before[$k], "\n";
}
// Every lost attempt counts: the losing set_nx, and the waiting lock call's
// attempts, at least its first (how many more fit in its 0.05 s is this
// host's pace, not asserted).
var_dump($after['set_nx_losses'] - $before['set_nx_losses'] >= 2);
var_dump($after['keys'], $after['bytes_used'] > 0, $after['backend'], $after['memory_limit']);
var_dump(preg_match('/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/', $after['instance_id']));
var_dump($after['pid'] === getmypid(), str_ends_with($after['library'], 'libephpm.so'));
var_dump($after['session_bytes'], $after['session_limit'], $after['processes']);

var_dump(ephpm_kv_flush_all());
$flushed = ephpm_kv_stats();
var_dump($flushed['keys'], $flushed['bytes_used'], ephpm_kv_get('t16:a'));
?>
--EXPECT--
bool(true)
bool(false)
sets +1
hits +1
misses +1
set_nx_wins +2
del_if_eq_matches +1
del_if_eq_mismatches +1
lock_timeouts +1
bool(true)
int(2)
bool(true)
string(6) "memory"
int(67108864)
int(1)
bool(true)
bool(true)
int(0)
int(33554432)
int(0)
bool(true)
int(0)
int(0)
NULL
