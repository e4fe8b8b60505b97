--TEST--
session handler on a shared-memory segment: when the killed holder's lock lapses, 10 requests waiting for the session at once take it one at a time (each increment is kept: no two held it together)
--EXTENSIONS--
ephpm
session
--FILE--
<?php
require __DIR__ . '/../inc/procs.inc';
require __DIR__ . '/../inc/segment.inc';
$segment = ephpm_test_segment('s34');
// The lock's hour and the waits' 600 s are hang catches, not speed bounds:
// the ten take the session in turn, the last after the nine before it, on
// a loaded host seconds apart; only the holder's death (found at once on a
// segment) lets the first in before the budget.
$ini = ['ephpm.kv_backend' => "shm://$segment", 'session.save_handler' => 'ephpm',
    'session.use_cookies' => '0', 'session.cache_limiter' => '', 'ephpm.session_lock_ttl' => '3600',
    'ephpm.session_lock_wait' => '600', 'ephpm.session_lock_timeout_action' => 'fail'];
$args = getenv('TEST_PHP_EXTRA_ARGS');
foreach ($ini as $k => $v) {
    $args .= ' -d ' . escapeshellarg("$k=$v");
}
$sid = 's34' . bin2hex(random_bytes(8));

// The holder: holds the session until it is killed.
$code = "session_id('$sid'); session_start(); \$_SESSION['n'] = 0; session_write_close(); session_start(); \$_SESSION['n'] = 100; echo \"held\\n\"; sleep(900);";
$p = proc_open('exec ' . getenv('TEST_PHP_EXECUTABLE') . " $args -r " . escapeshellarg($code), [1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes);
$line = fgets($pipes[1]);
echo $line;

// Ten requests released together wait for it; the holder is killed once
// they are released.
$children = ephpm_spawn(<<<PHP
    session_id('$sid');
    if (!session_start()) { echo "not started\n"; exit; }
    \$n = \$_SESSION['n'];
    usleep(20000); // a request's work, with the session held
    \$_SESSION['n'] = \$n + 1;
    session_write_close();
    echo "ok\n";
    PHP, 10, $ini);
ephpm_release($children);
usleep(100000);
proc_terminate($p, 9);
fclose($pipes[1]);
proc_close($p);
$out = ephpm_collect($children);
echo implode('', array_count_values($out) === ["ok\n" => 10] ? ["10 ok\n"] : $out);

$r = shell_exec(getenv('TEST_PHP_EXECUTABLE') . " $args -r " . escapeshellarg("session_id('$sid'); session_start(); echo \$_SESSION['n'], \"\\n\";"));
echo $r;
?>
--CLEAN--
<?php
require __DIR__ . '/../inc/segment.inc';
ephpm_remove_test_segments('s34');
?>
--EXPECT--
held
10 ok
10
