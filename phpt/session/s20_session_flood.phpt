--TEST--
session handler: a flood of anonymous sessions stays within ephpm.session_memory_limit; returning users keep theirs, new users log in, sets and locks work
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
session.serialize_handler=php
ephpm.kv_memory_limit=256K
ephpm.kv_eviction=allkeys-lru
--SKIPIF--
<?php if (ephpm_kv_stats()['backend'] !== 'memory') die('skip the in-process store only'); ?>
--FILE--
<?php
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

// A user logs in before the flood: the login page, then the login.
visit('returning', $csrf);
$read = visit('returning', function () { $_SESSION['user'] = 'alice'; });
var_dump(isset($read['csrf']));

// 2500 cookie-less GETs of the login page: a session each, never used again.
for ($i = 0; $i < 2500; $i++) {
    visit(bin2hex(random_bytes(16)), $csrf);
}
$s = ephpm_kv_stats();
var_dump($s['evictions'] > 0, $s['bytes_used'] <= $s['memory_limit']);

// The returning user still has the session; a new user can log in.
var_dump(visit('returning', fn() => null)['user'] ?? 'LOST');
visit('newuser', $csrf);
var_dump(isset(visit('newuser', function () { $_SESSION['user'] = 'bob'; })['csrf']));
var_dump(visit('newuser', fn() => null)['user'] ?? 'LOST');

// Other keys and locks are unaffected.
var_dump(ephpm_kv_set('t17:value', str_repeat('v', 1000)));
$lock = ephpm_kv_lock('t17:lock', 10);
var_dump(is_string($lock), ephpm_kv_unlock('t17:lock', $lock));

// Under noeviction, the session budget refuses a new session's write with
// a warning that names the setting; sets and locks still work.
require __DIR__ . '/../inc/child.inc';
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
    echo 'set: ', var_export(ephpm_kv_set('t17:after', str_repeat('v', 1000)), true), "\n";
    $lock = ephpm_kv_lock('t17:lock', 10);
    echo 'lock: ', var_export(is_string($lock) && ephpm_kv_unlock('t17:lock', $lock), true), "\n";
    PHP, ['ephpm.kv_eviction' => 'noeviction', 'ephpm.session_memory_limit' => '16K',
          'session.save_handler' => 'ephpm', 'session.use_cookies' => '0', 'session.cache_limiter' => '']);
?>
--EXPECTF--
bool(true)
bool(true)
bool(true)
string(5) "alice"
bool(true)
string(3) "bob"
bool(true)
bool(true)
bool(true)
session_write_close(): ephpm: session flood%d: not written: the store is out of memory; nothing was written (kv: out of memory: session data would exceed ephpm.session_memory_limit (16384 bytes))
refused after %d sessions: true
first kept: true
set: true
lock: true
