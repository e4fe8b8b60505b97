--TEST--
fencing tokens across processes: 20 processes released together take one lock 200 times each; every grant's fence is above the one before it, and a process's previous fence is refused
--EXTENSIONS--
ephpm
pcntl
--INI--
; The barrier and the answers travel over socket pairs, whose reads time out
; after default_socket_timeout (60 s): on a loaded host the parent waits on
; the first child longer than that. 600 s is a hang catch.
default_socket_timeout=600
--SKIPIF--
<?php
if (ephpm_kv_stats()['backend'] === 'memory') die('skip a store shared by processes (shm, Redis) only');
?>
--FILE--
<?php
// The lock and the data share a hash tag: one slot on a Redis Cluster.
$lock = '{t46}:hot';
$data = '{t46}:data';
$procs = 20;
$rounds = 200;
$children = [];
for ($i = 0; $i < $procs; $i++) {
    [$parent, $child] = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
    $pid = pcntl_fork();
    if ($pid === 0) {
        fclose($parent);
        ephpm_kv_exists($lock);              // load the library before the barrier
        fwrite($child, 'r');                 // ready
        fread($child, 1);                    // released together
        $bad = [];
        $fences = [];
        $prev = 0;
        for ($r = 0; $r < $rounds; $r++) {
            // The 600 s wait is a hang catch, not a speed bound.
            try {
                $t = ephpm_kv_lock($lock, 60, 600.0, null, $f);
            } catch (Throwable $e) {
                $bad[] = "round $r: " . get_class($e) . ': ' . $e->getMessage();
                break;
            }
            if ($t === false) {
                $bad[] = "round $r: not granted in 600 s";
                continue;
            }
            $last = (int) ephpm_kv_get('{t46}:last');
            if ($f <= $last) {
                $bad[] = "round $r: fence $f after $last";
            }
            ephpm_kv_set('{t46}:last', (string) $f);
            if (!ephpm_kv_set_fenced($data, (string) $f, $lock, $f)) {
                $bad[] = "round $r: the holder's write was refused";
            }
            if ($prev > 0 && ephpm_kv_set_fenced($data, 'stale', $lock, $prev)) {
                $bad[] = "round $r: a stale fence $prev wrote";
            }
            $fences[] = $f;
            $prev = $f;
            if (!ephpm_kv_unlock($lock, $t)) {
                $bad[] = "round $r: lost the lock";
            }
        }
        // A message may quote bytes that are not UTF-8 (a key, a token): substituted, not lost.
        fwrite($child, json_encode(['bad' => $bad, 'fences' => $fences], JSON_INVALID_UTF8_SUBSTITUTE));
        exit(0);
    }
    fclose($child);
    $children[$pid] = $parent;
}
foreach ($children as $s) {
    fread($s, 1);
}
foreach ($children as $s) {
    fwrite($s, 'g');
}
$all = [];
$bad = [];
foreach ($children as $pid => $s) {
    $out = json_decode(stream_get_contents($s), true);
    pcntl_waitpid($pid, $status);
    $bad = array_merge($bad, $out['bad'] ?? [sprintf('child %d ended without its answer: %s', $pid,
        pcntl_wifsignaled($status) ? 'signal ' . pcntl_wtermsig($status) : 'exit ' . pcntl_wexitstatus($status))]);
    $all = array_merge($all, $out['fences'] ?? []);
}
echo implode("\n", array_slice($bad, 0, 10)), "\n";
var_dump(count($all), count(array_unique($all)));
var_dump(max($all) === ephpm_kv_fence($lock), ephpm_kv_get($data) === (string) max($all));
ephpm_kv_del('{t46}:last');
ephpm_kv_del($data);
?>
--EXPECT--

int(4000)
int(4000)
bool(true)
bool(true)
