--TEST--
ephpm: a child forked after first use gets Ephpm\KvException (FORKED) naming both pids; a child forked before first use has its own store
--EXTENSIONS--
ephpm
--SKIPIF--
<?php
if (!function_exists('pcntl_fork')) die('skip pcntl not available');
// GCC 12's AddressSanitizer takes no allocator lock around fork(): a child
// forked while a thread of this process (the Go runtime's) is in malloc
// inherits that lock held, and hangs at its first free (tests/sanitize/run.sh).
if (str_contains((string) @file_get_contents('/proc/self/maps'), 'libasan')) die('skip a forked child under AddressSanitizer');
?>
--FILE--
<?php
// Forked before the library is loaded in this process: the child loads its own.
$key = 't12:child:' . bin2hex(random_bytes(4));
$pid = pcntl_fork();
if ($pid === 0) {
    $ok = ephpm_kv_setnx($key, 'c') && ephpm_kv_get($key) === 'c';
    exit($ok ? 0 : 1);
}
pcntl_waitpid($pid, $status);
echo 'child before first use: exit ', pcntl_wexitstatus($status), "\n";
// In-process, the child's store was its own; a shared backend is shared.
var_dump(ephpm_kv_get($key) === (ephpm_kv_stats()['backend'] === 'memory' ? null : 'c'));

ephpm_kv_set('t12:k', 'parent');
$parent = getmypid();
$pid = pcntl_fork();
if ($pid === 0) {
    try {
        ephpm_kv_get('t12:k');
        exit(1);
    } catch (Ephpm\KvException $e) {
        $child = getmypid();
        $named = str_contains($e->getMessage(), "pid $child")
              && str_contains($e->getMessage(), "pid $parent");
        exit($e->getCode() === Ephpm\KvException::FORKED && $named ? 0 : 2);
    }
}
pcntl_waitpid($pid, $status);
echo 'child after first use: ', pcntl_wifexited($status) ? 'exit ' . pcntl_wexitstatus($status) : 'killed', "\n";
var_dump(ephpm_kv_get('t12:k'));
var_dump(ephpm_kv_setnx('t12:after', 'p'));
?>
--EXPECT--
child before first use: exit 0
bool(true)
child after first use: exit 0
string(6) "parent"
bool(true)
