--TEST--
session handler on a shared-memory segment: a flood of anonymous sessions from one process stays within ephpm.session_memory_limit; a returning user's session, written by other processes, stays; sets and locks work
--EXTENSIONS--
ephpm
session
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
$segments = ['s25-' . getmypid(), 's25n-' . getmypid()];
$ini = fn(string $segment, string $eviction) => [
    'ephpm.kv_backend' => "shm://$segment", 'ephpm.kv_memory_limit' => '256K', 'ephpm.kv_eviction' => $eviction,
    'session.save_handler' => 'ephpm', 'session.use_cookies' => '0', 'session.cache_limiter' => '',
    'session.serialize_handler' => 'php'];
$visit = <<<'PHP'
    /* One request of session $sid: start, let $change alter it, write, close.
     * Returns what session_start() read. */
    function visit(string $sid, callable $change): array {
        session_id($sid);
        if (!session_start()) {
            echo "session_start($sid) failed\n";
        }
        $read = $_SESSION;
        $change();
        session_write_close();
        return $read;
    }
    $csrf = fn() => $_SESSION['csrf'] = bin2hex(random_bytes(32));
    PHP;
$lru = $ini($segments[0], 'allkeys-lru');

// A user logs in before the flood, in a process of its own: the login
// page, then the login.
echo ephpm_child($visit . <<<'PHP'
    visit('returning', $csrf);
    $read = visit('returning', function () { $_SESSION['user'] = 'alice'; });
    echo 'login: ', var_export(isset($read['csrf']), true), "\n";
    PHP, $lru);

// Another process: 2500 cookie-less GETs of the login page, a session each,
// never used again.
echo ephpm_child($visit . <<<'PHP'
    for ($i = 0; $i < 2500; $i++) {
        visit(bin2hex(random_bytes(16)), $csrf);
    }
    $s = ephpm_kv_stats();
    echo 'backend: ', $s['backend'], "\n";
    echo 'evicted: ', var_export($s['evictions'] > 0, true), "\n";
    echo 'within the budget: ', var_export($s['session_bytes'] <= $s['session_limit'] && $s['session_limit'] == 128 << 10, true), "\n";
    echo 'within the limit: ', var_export($s['bytes_used'] <= $s['memory_limit'], true), "\n";
    PHP, $lru);

// A third: the returning user still has the session; a new user can log
// in; other keys and locks are unaffected.
echo ephpm_child($visit . <<<'PHP'
    echo 'returning: ', visit('returning', fn() => null)['user'] ?? 'LOST', "\n";
    visit('newuser', $csrf);
    echo 'new user: ', var_export(isset(visit('newuser', function () { $_SESSION['user'] = 'bob'; })['csrf']), true), "\n";
    echo 'new user: ', visit('newuser', fn() => null)['user'] ?? 'LOST', "\n";
    echo 'set: ', var_export(ephpm_kv_set('s25:value', str_repeat('v', 1000)), true), "\n";
    $lock = ephpm_kv_lock('s25:lock', 10);
    echo 'lock: ', var_export(is_string($lock) && ephpm_kv_unlock('s25:lock', $lock), true), "\n";
    PHP, $lru);

// Under noeviction, the session budget refuses a new session's write with
// a warning that names the setting; sets and locks still work.
echo ephpm_child(<<<'PHP'
    session_id('first');
    session_start();
    $_SESSION['csrf'] = str_repeat('c', 64);
    session_write_close();
    $warning = null;
    set_error_handler(function ($no, $msg) use (&$warning) { $warning ??= $msg; return true; });
    for ($i = 0; $i < 1000 && $warning === null; $i++) {
        session_id("flood$i");
        session_start();
        $_SESSION['csrf'] = str_repeat('c', 64);
        session_write_close();
    }
    restore_error_handler();
    echo $warning, "\n", "refused after $i sessions: ", var_export($i > 50 && $i < 1000, true), "\n";
    session_id('first');
    session_start();
    echo 'first kept: ', var_export(isset($_SESSION['csrf']), true), "\n";
    session_write_close();
    echo 'set: ', var_export(ephpm_kv_set('s25:after', str_repeat('v', 1000)), true), "\n";
    $lock = ephpm_kv_lock('s25:lock', 10);
    echo 'lock: ', var_export(is_string($lock) && ephpm_kv_unlock('s25:lock', $lock), true), "\n";
    PHP, ['ephpm.session_memory_limit' => '16K'] + $ini($segments[1], 'noeviction'));

foreach ($segments as $name) {
    foreach (glob("/dev/shm/ephpm-$name.*") as $file) {
        unlink($file);
    }
}
?>
--EXPECTF--
login: true
backend: shm
evicted: true
within the budget: true
within the limit: true
returning: alice
new user: true
new user: bob
set: true
lock: true
session_write_close(): ephpm: session flood%d: not written: the store is out of memory; nothing was written (kv: out of memory: session data would exceed ephpm.session_memory_limit (16384 bytes))
refused after %d sessions: true
first kept: true
set: true
lock: true
