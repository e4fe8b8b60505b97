--TEST--
ephpm_kv_remember: 50 processes released together at a barrier on one cold key run $compute exactly once, and all return its value
--EXTENSIONS--
ephpm
--SKIPIF--
<?php
// The in-process store is each process's own: one key cannot be cold for 50.
if (ephpm_kv_stats()['backend'] === 'memory') die('skip a store shared between processes only');
if (!function_exists('proc_open')) die('skip proc_open');
?>
--FILE--
<?php
require __DIR__ . '/../inc/procs.inc';
ephpm_kv_del('t43:cold');
ephpm_kv_del('t43:computed');
// $compute counts its runs in the store itself and takes 300 ms, so that
// the other 49 arrive while it runs. The 300 s wait is a hang catch, not a
// speed bound: 50 processes start slowly on a loaded host; the value's hour
// outlives the slowest of them reading it.
$children = ephpm_spawn('echo ephpm_kv_remember("t43:cold", 3600, function () {
    $n = ephpm_kv_incr("t43:computed");
    usleep(300000);
    return "computed by run $n";
}, 300.0);', 50);
ephpm_release($children);
$answers = array_count_values(ephpm_collect($children));
var_dump($answers);
var_dump(ephpm_kv_get('t43:computed'), ephpm_kv_exists('remember_lock:t43:cold'));
ephpm_kv_del('t43:cold');
ephpm_kv_del('t43:computed');
?>
--EXPECT--
array(1) {
  ["computed by run 1"]=>
  int(50)
}
string(1) "1"
bool(false)
