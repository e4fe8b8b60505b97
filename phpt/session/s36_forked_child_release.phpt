--TEST--
session handler: a forked child that cannot release its parent's session lock says what becomes of the lock on this backend (the parent releases it; if the parent dies, on shm it lapses at once, on Redis within its lease)
--EXTENSIONS--
ephpm
session
--SKIPIF--
<?php
if (!function_exists('pcntl_fork')) die('skip pcntl not available');
// GCC 12's AddressSanitizer takes no allocator lock around fork(): a child
// forked while a thread of this process (the Go runtime's) is in malloc
// inherits that lock held, and hangs at its first free (tests/sanitize/run.sh).
if (str_contains((string) @file_get_contents('/proc/self/maps'), 'libasan')) die('skip a forked child under AddressSanitizer');
?>
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
ephpm.session_lock_ttl=45
--FILE--
<?php
session_id('s36' . bin2hex(random_bytes(6)));
session_start();
$_SESSION['n'] = 1;
$backend = ephpm_kv_stats()['backend'];
// 'redis', 'redis-cluster', 'redis-sentinel': one kind of store here.
$kind = str_starts_with($backend, 'redis') ? 'redis' : $backend;
$parent = getmypid();
$out = tempnam(sys_get_temp_dir(), 's36');
$pid = pcntl_fork();
if ($pid === 0) {
    $msg = '';
    set_error_handler(function ($no, $str) use (&$msg) { $msg .= $str . "\n"; return true; });
    session_write_close();
    file_put_contents($out, $msg);
    exit(0);
}
pcntl_waitpid($pid, $status);
$msg = file_get_contents($out);
unlink($out);
preg_match('/releasing the session lock \S+ failed: .*/', $msg, $m);
$release = $m[0] ?? "(no release warning in: $msg)";
$want = [
    // The segment records the parent as the lock's holder.
    'shm' => ["stays with pid $parent", "lapses at once"],
    // The parent's renewals keep it: a lease after they stop, it lapses.
    'redis' => ["stays with pid $parent", "lapses within its lease", "ephpm.session_lock_ttl=45"],
    // The lock is in the parent's own store.
    'memory' => ["stays with pid $parent", "in-process store"],
][$kind];
$bad = array_filter($want, fn($w) => !str_contains($release, $w));
if (str_contains($release, 'expires by its TTL')) {
    $bad[] = 'not "expires by its TTL"';
}
echo $bad ? "$backend: missing " . implode(', ', $bad) . " in: $release\n" : "ok\n";
// The parent still holds the lock, and releases it at its end.
var_dump(session_write_close());
?>
--EXPECT--
ok
bool(true)
