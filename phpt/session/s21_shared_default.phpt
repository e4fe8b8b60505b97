--TEST--
session handler, no ephpm setting: 40 concurrent requests on one session across php -S workers (one shared segment) keep all 40 writes
--EXTENSIONS--
ephpm
--INI--
session.save_handler=ephpm
--SKIPIF--
<?php
if (ini_get('ephpm.kv_backend') !== 'auto') die('skip ephpm.kv_backend is set');
// run-tests.php -m: the server's processes run under valgrind too, and 40
// requests in turn take minutes there.
if (getenv('USE_ZEND_ALLOC') === '0') die('skip too slow under valgrind');
?>
--FILE--
<?php
require __DIR__ . '/../inc/listen.inc';
// The 40 requests take the session in turn: the last waits for the 39
// before it, seconds on a loaded host. The lock wait (600 s) and every
// other bound here are hang catches, not speed bounds: a request that
// waited out the lock wait would go on unlocked and lose writes.
$cmd = 'exec ' . getenv('TEST_PHP_EXECUTABLE') . ' ' . getenv('TEST_PHP_EXTRA_ARGS')
     . ' -d session.save_handler=ephpm -d session.use_strict_mode=0 -d ephpm.session_lock_wait=600';
$www = escapeshellarg(__DIR__ . '/../www');
$port = ephpm_test_listen(static function (int $port) use ($cmd, $www, &$proc) {
    return $proc = proc_open("$cmd -S 127.0.0.1:$port -t $www",
        [0 => ['pipe', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']],
        $pipes, null, getenv() + ['PHP_CLI_SERVER_WORKERS' => '4']);
}, 'php -S with workers');
$master = proc_get_status($proc)['pid'];
$sid = 's21' . bin2hex(random_bytes(8));
// All 40 requests sent before any answer is read.
$conns = [];
for ($i = 0; $i < 40; $i++) {
    $c = stream_socket_client("tcp://127.0.0.1:$port", $errno, $errstr, 300);
    fwrite($c, "GET /session.php?do=add&sid=$sid&i=$i HTTP/1.0\r\nHost: x\r\n\r\n");
    $conns[] = $c;
}
$pids = [];
foreach ($conns as $c) {
    stream_set_timeout($c, 600);
    $resp = stream_get_contents($c);
    $pids[(int) substr($resp, strpos($resp, "\r\n\r\n") + 4)] = true;
    fclose($c);
}
echo file_get_contents("http://127.0.0.1:$port/session.php?do=count&sid=$sid"), " of 40 kept, written by ",
     count($pids) > 1 ? 'several processes' : 'one process', "\n";
$children = array_filter(explode(' ', trim((string) @file_get_contents("/proc/$master/task/$master/children"))));
exec('kill ' . implode(' ', array_map('intval', [...$children, $master])));
proc_close($proc);
?>
--EXPECT--
40 of 40 kept, written by several processes
