--TEST--
read/write locks across processes: 8 readers and 2 writers released together at a barrier take one name 40 times each; a writer never holds it beside anyone, a reader never beside a writer, readers do share it, and every grant's fence is above every earlier grant's (a reader's: above the writer's before it)
--EXTENSIONS--
ephpm
--SKIPIF--
<?php
// The in-process store is each process's own: they would share nothing.
if (ephpm_kv_stats()['backend'] === 'memory') die('skip a store shared between processes only');
if (!function_exists('proc_open')) die('skip proc_open');
?>
--FILE--
<?php
require __DIR__ . '/../inc/procs.inc';
// One hash tag: on a Redis Cluster the lock and the counters share a slot.
foreach (['readers', 'writers', 'together', 'lastw', 'spawned', 'maxr:1', 'maxr:2', 'maxr:3', 'maxr:4', 'maxr:5', 'maxr:6', 'maxr:7', 'maxr:8'] as $k) {
    ephpm_kv_del("{t53}:$k");
}
ephpm_kv_del('{t53}:rw');
// Inside the lock each process counts itself in (ephpm_kv_incr, atomic),
// looks at the other kind's count, holds the lock a moment, and counts
// itself out. A writer, holding alone, also checks its fence against every
// reader's latest fence (reader i's key maxr:i) and the last writer's.
// The 600 s waits are hang catches, not speed bounds.
$common = '$n = "{t53}:rw"; $bad = []; $fences = [];';
$reader = $common . ' $i = ephpm_kv_incr("{t53}:spawned");
for ($r = 0; $r < 40; $r++) {
    $t = ephpm_kv_lock_read($n, 60, 600.0, null, $f);
    if ($t === false) { $bad[] = "round $r: no read lock in 600 s"; continue; }
    $in = ephpm_kv_incr("{t53}:readers");
    if ($in > 1) { ephpm_kv_incr("{t53}:together"); }
    if ((int) ephpm_kv_get("{t53}:writers") !== 0) { $bad[] = "round $r: a writer beside a reader"; }
    if ($f <= (int) ephpm_kv_get("{t53}:lastw")) { $bad[] = "round $r: read fence $f not above the last writer\'s"; }
    ephpm_kv_set("{t53}:maxr:$i", (string) $f);
    $fences[] = $f;
    usleep(500);
    ephpm_kv_decr("{t53}:readers");
    if (!ephpm_kv_unlock($n, $t)) { $bad[] = "round $r: lost the read hold"; }
}
echo json_encode(["bad" => $bad, "fences" => $fences]);';
$writer = $common . '
for ($r = 0; $r < 40; $r++) {
    $t = ephpm_kv_lock($n, 60, 600.0, null, $f);
    if ($t === false) { $bad[] = "round $r: no write lock in 600 s"; continue; }
    if (ephpm_kv_incr("{t53}:writers") !== 1) { $bad[] = "round $r: two writers"; }
    if (($readers = (int) ephpm_kv_get("{t53}:readers")) !== 0) { $bad[] = "round $r: $readers readers beside a writer"; }
    if ($f <= (int) ephpm_kv_get("{t53}:lastw")) { $bad[] = "round $r: write fence $f not above the last writer\'s"; }
    foreach (ephpm_kv_get_many(array_map(fn ($i) => "{t53}:maxr:$i", range(1, 8))) as $k => $v) {
        if ($f <= (int) $v) { $bad[] = "round $r: write fence $f not above $k = $v"; }
    }
    ephpm_kv_set("{t53}:lastw", (string) $f);
    $fences[] = $f;
    usleep(500);
    ephpm_kv_decr("{t53}:writers");
    if (!ephpm_kv_unlock($n, $t)) { $bad[] = "round $r: lost the write lock"; }
}
echo json_encode(["bad" => $bad, "fences" => $fences]);';
$all = array_merge(ephpm_spawn($reader, 8), ephpm_spawn($writer, 2));
ephpm_release($all);
$bad = [];
$fences = [];
foreach (ephpm_collect($all) as $out) {
    $o = json_decode($out, true);
    $bad = array_merge($bad, $o['bad'] ?? ["a child died: $out"]);
    $fences = array_merge($fences, $o['fences'] ?? []);
}
echo implode("\n", array_slice($bad, 0, 10)), "\n";
var_dump(count($fences), count(array_unique($fences)), max($fences) === ephpm_kv_fence('{t53}:rw'));
var_dump((int) ephpm_kv_get('{t53}:together') > 0, ephpm_kv_lock_info('{t53}:rw'));
?>
--EXPECT--

int(400)
int(400)
bool(true)
bool(true)
NULL
