--TEST--
read/write locks across processes: a writer waiting for readers is not starved by a stream of readers that keep re-entering (each enters again while the others hold); it gets the lock within its wait, and the readers carry on after it
--EXTENSIONS--
ephpm
--SKIPIF--
<?php
if (ephpm_kv_stats()['backend'] === 'memory') die('skip a store shared between processes only');
if (!function_exists('proc_open')) die('skip proc_open');
?>
--FILE--
<?php
require __DIR__ . '/../inc/procs.inc';
ephpm_kv_del('{t54}:rw');
ephpm_kv_del('{t54}:stop');
ephpm_kv_del('{t54}:grants');
// 6 readers, each holding the name 20 ms at a time and taking it again at
// once: with 6 of them there is always a reader inside, so a writer that
// waited only for the name to be free would wait for ever. They read until
// the test stops them, or for 600 s (a hang catch, beyond the writer's
// 120 s wait: a starved writer is refused while they still read). Every
// wait here is a hang catch, not a speed bound.
$children = ephpm_spawn('$n = "{t54}:rw"; $rounds = 0; $bad = ""; $end = microtime(true) + 600;
while (ephpm_kv_get("{t54}:stop") === null && microtime(true) < $end) {
    $t = ephpm_kv_lock_read($n, 60, 600.0);
    if ($t === false) { $bad = "no read lock in 600 s"; break; }
    ephpm_kv_incr("{t54}:grants");
    usleep(20000);
    ephpm_kv_unlock($n, $t);
    $rounds++;
}
echo $bad === "" && $rounds > 0 ? "ok" : "bad: $bad after $rounds rounds";', 6);
ephpm_release($children);
// Wait until the readers' stream runs: 30 grants made.
$end = microtime(true) + 120;
while ((int) ephpm_kv_get('{t54}:grants') < 30 && microtime(true) < $end) {
    usleep(5000);
}
if ((int) ephpm_kv_get('{t54}:grants') < 30) {
    echo "the readers' stream did not start within 120 s\n";
}
$w = ephpm_kv_lock('{t54}:rw', 60, 120.0);
var_dump($w !== false, ephpm_kv_lock_info('{t54}:rw'));
$during = (int) ephpm_kv_get('{t54}:grants');
usleep(50000);
var_dump((int) ephpm_kv_get('{t54}:grants') === $during);       // no reader entered beside the writer
ephpm_kv_unlock('{t54}:rw', $w);
// The readers get in again after the writer, then stop.
$end = microtime(true) + 120;
while ((int) ephpm_kv_get('{t54}:grants') <= $during && microtime(true) < $end) {
    usleep(5000);
}
var_dump((int) ephpm_kv_get('{t54}:grants') > $during);
ephpm_kv_set('{t54}:stop', '1');
var_dump(array_count_values(ephpm_collect($children)));
ephpm_kv_del('{t54}:stop');
ephpm_kv_del('{t54}:grants');
?>
--EXPECT--
bool(true)
array(2) {
  ["mode"]=>
  string(9) "exclusive"
  ["holders"]=>
  int(1)
}
bool(true)
bool(true)
array(1) {
  ["ok"]=>
  int(6)
}
