--TEST--
session handler on a shared-memory segment: a request killed while it holds a session's lock (SIGKILL, as php-fpm's request_terminate_timeout or a reload ends it) blocks that session for milliseconds, not for ephpm.session_lock_ttl; a live holder still excludes
--EXTENSIONS--
ephpm
session
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
require __DIR__ . '/../inc/segment.inc';
$segment = ephpm_test_segment('s33');
// A lock of an hour, and waits of 600 s: only the holder's death can end a
// wait before the budget, and no bound below is this host's pace (300 s is
// a hang catch).
$ini = ['ephpm.kv_backend' => "shm://$segment", 'session.save_handler' => 'ephpm',
    'session.use_cookies' => '0', 'session.cache_limiter' => '', 'ephpm.session_lock_ttl' => '3600'];
$args = getenv('TEST_PHP_EXTRA_ARGS');
foreach ($ini as $k => $v) {
    $args .= ' -d ' . escapeshellarg("$k=$v");
}

/* A request in its own process that holds the session's lock until it is
 * killed: it says "held" once session_start() has returned. */
function holder(string $args, string $sid): array
{
    $code = "session_id('$sid'); session_start(); \$_SESSION['n'] = 2; echo 'held ', getmypid(), \"\\n\"; sleep(900);";
    $p = proc_open("exec " . getenv('TEST_PHP_EXECUTABLE') . " $args -r " . escapeshellarg($code), [1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes);
    $line = fgets($pipes[1]);
    if (!str_starts_with((string)$line, 'held ')) {
        echo 'the holder did not start: ', $line, stream_get_contents($pipes[1]), "\n";
    }
    return [$p, $pipes];
}

/* Another request on the session: how long session_start() took, and what
 * it read. */
$visit = fn(string $sid, string $wait, string $action) => ephpm_child(<<<PHP
    session_id('$sid');
    \$t = microtime(true);
    \$ok = session_start();
    printf("ok=%s n=%s waited<300s=%s\n", var_export(\$ok, true), \$_SESSION['n'] ?? '-', var_export(microtime(true) - \$t < 300, true));
    PHP, $ini + ['ephpm.session_lock_wait' => $wait, 'ephpm.session_lock_timeout_action' => $action]);

$sid = 's33' . bin2hex(random_bytes(8));
echo ephpm_child("session_id('$sid'); session_start(); \$_SESSION['n'] = 1; session_write_close(); echo \"written\\n\";", $ini);

// A live holder: the lock is not had in 0.3 s, and `fail` fails.
[$p, $pipes] = holder($args, $sid);
echo preg_replace('/ \d+\.\d+ seconds/', ' N seconds', $visit($sid, '0.3', 'fail'));

// The holder is killed: the next request gets the session at once (its
// lock has an hour left, the wait 600 s), with the data written before
// (the killed request wrote nothing).
proc_terminate($p, 9);
fclose($pipes[1]);
proc_close($p);
echo $visit($sid, '600', 'fail');
echo $visit($sid, '0', 'fail');
?>
--CLEAN--
<?php
require __DIR__ . '/../inc/segment.inc';
ephpm_remove_test_segments('s33');
?>
--EXPECTF--
written

Warning: session_start(): %s

Warning: session_start(): %s
ok=false n=- waited<300s=true
ok=true n=1 waited<300s=true
ok=true n=1 waited<300s=true
