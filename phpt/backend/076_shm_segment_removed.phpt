--TEST--
shared-memory store: a segment file removed under running processes (systemd-logind's RemoveIPC=yes) gives no second lock holder: a server process refuses from its next request, a long-running script from its next call after the check interval, naming the cause and the fix
--EXTENSIONS--
ephpm
--SKIPIF--
<?php if (!is_dir('/dev/shm')) die('skip no /dev/shm'); ?>
--FILE--
<?php
require __DIR__ . '/../inc/server.inc';
require __DIR__ . '/../inc/child.inc';
require __DIR__ . '/../inc/segment.inc';
$segment = ephpm_test_segment('t76');
$ini = ['ephpm.kv_backend' => "shm://$segment"];
$call = fn(string $url, string $call, string $key = '', string $token = '') =>
    ephpm_http_get("$url/one_call.php?" . http_build_query(['call' => $call, 'key' => $key, 'token' => $token]));
$said = function (string $who, string $answer) use (&$file): void {
    if (!str_starts_with($answer, 'refused: ')) {
        echo "$who: $answer\n";
        return;
    }
    $named = str_contains($answer, $file) && str_contains($answer, 'RemoveIPC=yes')
        && str_contains($answer, 'RemoveIPC=no in /etc/systemd/logind.conf');
    echo "$who: refused, ", $named ? 'naming the file, the cause and the fix' : "badly: $answer", "\n";
};

// A: one php -S process, serving request after request from the segment.
$a = ephpm_test_server($ini);
preg_match('/^shm (\S+)/', $call($a, 'store'), $m);
$file = $m[1];
$said('A takes lock1', $call($a, 'setnx', 't76:lock1', 'a'));

// C: a long-running script that holds lock3 across the removal.
$cmd = getenv('TEST_PHP_EXECUTABLE') . ' ' . getenv('TEST_PHP_EXTRA_ARGS') . ' -d ' . escapeshellarg("ephpm.kv_backend=shm://$segment")
    . ' -r ' . escapeshellarg('var_export(ephpm_kv_setnx("t76:lock3", "c", 60)); echo "\n"; fgets(STDIN); sleep(1);
        try { var_export(ephpm_kv_lock_refresh("t76:lock3", "c", 60)); } catch (Ephpm\KvException $e) { echo "refused: ", $e->getMessage(); }');
$c = proc_open($cmd, [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['redirect', 1]], $cp);
echo 'C takes lock3: ', fgets($cp[1]);

// The user's last login session ends: logind removes the user's files in /dev/shm.
unlink($file);

// B: a new process opens the name, gets a new segment, and the locks.
echo ephpm_child('foreach (["t76:lock1", "t76:lock2", "t76:lock3"] as $l) { echo "B takes $l: ", var_export(ephpm_kv_setnx($l, "b", 60), true), "\n"; }', $ini);

// A's next request: refused at once, not granted lock2, not told it holds lock1.
$said('A takes lock2', $call($a, 'setnx', 't76:lock2', 'a'));
$said('A refreshes lock1', $call($a, 'refresh', 't76:lock1', 'a'));
// C's next call, a second later: refused, not told it holds lock3.
fwrite($cp[0], "go\n");
$said('C refreshes lock3', stream_get_contents($cp[1]));
proc_close($c);
// The new segment has one holder of each lock: B.
echo ephpm_child('foreach (["t76:lock1", "t76:lock2", "t76:lock3"] as $l) { echo "$l: ", ephpm_kv_get($l), "\n"; }', $ini);
?>
--CLEAN--
<?php
require __DIR__ . '/../inc/segment.inc';
ephpm_remove_test_segments('t76');
?>
--EXPECT--
A takes lock1: true
C takes lock3: true
B takes t76:lock1: true
B takes t76:lock2: true
B takes t76:lock3: true
A takes lock2: refused, naming the file, the cause and the fix
A refreshes lock1: refused, naming the file, the cause and the fix
C refreshes lock3: refused, naming the file, the cause and the fix
t76:lock1: b
t76:lock2: b
t76:lock3: b
