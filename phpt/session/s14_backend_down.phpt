--TEST--
Redis backend unreachable: calls fail fast with UNAVAILABLE naming the cause; the session handler warns and applies its action without spinning
--EXTENSIONS--
ephpm
session
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
// Nothing listens on port 1.
$ini = ['ephpm.kv_backend' => '"redis://127.0.0.1:1?dial_timeout=300ms"', 'session.save_handler' => 'ephpm',
        'session.use_cookies' => '0', 'ephpm.session_lock_wait' => '600'];
// "Without spinning": none of it waits for the lock's or the session's
// wait budget (600 s); the 300 s bound on the whole is a hang catch, not a
// speed bound.
echo ephpm_child(<<<'PHP'
    $t = hrtime(true);
    foreach ([fn () => ephpm_kv_get('k'), fn () => ephpm_kv_setnx('k', 'v'), fn () => ephpm_kv_lock('k', 5, 600.0)] as $f) {
        try { var_dump($f()); } catch (Ephpm\KvException $e) {
            echo $e->getCode() === Ephpm\KvException::UNAVAILABLE ? 'UNAVAILABLE' : $e->getCode(), ': ', $e->getMessage(), "\n";
        }
    }
    foreach (['proceed', 'fail'] as $action) {
        ini_set('ephpm.session_lock_timeout_action', $action);
        session_id('s14');
        set_error_handler(function ($no, $msg) { echo "warning: $msg\n"; return true; });
        var_dump(@session_start());
        if (session_status() === PHP_SESSION_ACTIVE) { session_abort(); }
        restore_error_handler();
    }
    echo 'no wait budget spent: ', var_export((hrtime(true) - $t) / 1e9 < 300, true), "\n";
    PHP, $ini);
?>
--EXPECTF--
UNAVAILABLE: ephpm_kv_get(): the store is unavailable; the outcome is unknown (dial tcp 127.0.0.1:1: connect: connection refused)
UNAVAILABLE: ephpm_kv_setnx(): the store is unavailable; the outcome is unknown (dial tcp 127.0.0.1:1: connect: connection refused)
UNAVAILABLE: ephpm_kv_lock(): the store is unavailable; the outcome is unknown (dial tcp 127.0.0.1:1: connect: connection refused)
warning: session_start(): ephpm: session s14: lock not acquired: the store is unavailable; the outcome is unknown (dial tcp 127.0.0.1:1: connect: connection refused); continuing without the lock (ephpm.session_lock_timeout_action=proceed)
warning: session_start(): ephpm: session s14: reading its data failed: %s
%A
warning: session_start(): ephpm: session s14: lock not acquired: the store is unavailable; the outcome is unknown (dial tcp 127.0.0.1:1: connect: connection refused); the session is not started (ephpm.session_lock_timeout_action=fail)
%A
bool(false)
no wait budget spent: true
