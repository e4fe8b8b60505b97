--TEST--
ephpm.kv_backend=auto: the CLI keeps the in-process store; php -S with workers shares its segment, which a CLI script reaches by name, and which goes once the server has ended
--EXTENSIONS--
ephpm
--SKIPIF--
<?php if (ini_get('ephpm.kv_backend') !== 'auto') die('skip ephpm.kv_backend is set'); ?>
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
require __DIR__ . '/../inc/server.inc';
require __DIR__ . '/../inc/listen.inc';
var_dump(ini_get('ephpm.kv_backend'), ephpm_kv_stats()['backend'], ephpm_kv_stats()['store']);

// php -S with two workers (and its master, which serves too), on a free
// port (inc/listen.inc: retried if another process took it; its wait a
// hang catch).
$cmd = 'exec ' . getenv('TEST_PHP_EXECUTABLE') . ' ' . getenv('TEST_PHP_EXTRA_ARGS');
$www = escapeshellarg(__DIR__ . '/../www');
$env = getenv() + ['PHP_CLI_SERVER_WORKERS' => '2'];
$port = ephpm_test_listen(static function (int $port) use ($cmd, $www, $env, &$proc) {
    return $proc = proc_open("$cmd -S 127.0.0.1:$port -t $www",
        [0 => ['pipe', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes, null, $env);
}, 'php -S with workers');
$master = proc_get_status($proc)['pid'];
$segment = "cli-server-127.0.0.1_$port";
$uid = (int) trim(shell_exec('id -u'));
$file = "/dev/shm/ephpm-$segment.$uid";
// A first request holds the process that runs it until the other 30 are
// served, so those go to the other processes whatever the host's
// scheduler favours; it counts itself last. They start once it runs: a
// server process accepts every connection pending before it runs a
// request, and would keep one of them behind the hold.
$held = sys_get_temp_dir() . "/ephpm-t30-hold-$port";
@unlink($held);
@unlink("$held.started");
$hold = stream_socket_client("tcp://127.0.0.1:$port", $errno, $errstr, 300);
fwrite($hold, "GET /kv_count.php?hold=" . rawurlencode($held) . " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
for ($end = microtime(true) + 300; !file_exists("$held.started") && microtime(true) < $end; ) {   // a hang catch
    usleep(10_000);
}
$pids = [];
$served = function (int $i, string $body) use (&$pids, $file) {
    [$n, $pid, $store] = explode(' ', $body, 3);
    $pids[$pid] = true;
    if ((int) $n !== $i || $store !== "shm $file (default: php -S with PHP_CLI_SERVER_WORKERS)") {
        echo "request $i: $n $pid $store\n";
    }
};
for ($i = 1; $i <= 30; $i++) {
    $served($i, ephpm_http_get("http://127.0.0.1:$port/kv_count.php"));
}
touch($held);
stream_set_timeout($hold, 300);                  // a hang catch
$reply = stream_get_contents($hold);
fclose($hold);
unlink($held);
unlink("$held.started");
$served(31, substr($reply, strpos($reply, "\r\n\r\n") + 4));
echo "31 requests counted into one store by ", count($pids) > 1 ? 'several processes' : 'one process', "\n";
echo ephpm_child('echo ephpm_kv_get("www:count"), " ", ephpm_kv_stats()["store"];', ['ephpm.kv_backend' => "shm://$segment"]), "\n";

var_dump(file_exists($file));   // while the server runs, nobody removes it
// The server ends (the master does not pass SIGTERM on to its workers).
// From then on any process of this user that opens a segment may remove
// the file, so the test does not look again until its own opener has.
$children = array_filter(explode(' ', trim((string) @file_get_contents("/proc/$master/task/$master/children"))));
exec('kill ' . implode(' ', array_map('intval', [...$children, $master])));
proc_close($proc);
$end = microtime(true) + 60;                     // a hang catch
while (array_filter($children, fn ($p) => file_exists("/proc/$p")) && microtime(true) < $end) {
    usleep(20_000);
}
ephpm_child('ephpm_kv_stats();', ['ephpm.kv_backend' => "shm://t30-$port"]);   // the next process to open a segment
@unlink("/dev/shm/ephpm-t30-$port.$uid");
var_dump(file_exists($file));
?>
--EXPECTF--
string(4) "auto"
string(6) "memory"
string(61) "memory, this process's own (default: cli runs in one process)"
31 requests counted into one store by several processes
31 shm /dev/shm/ephpm-cli-server-127.0.0.1_%d.%d (ephpm.kv_backend)
bool(true)
bool(false)
