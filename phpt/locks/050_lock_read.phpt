--TEST--
ephpm_kv_lock_read: readers share a name, each with its own fresh token and fence; a writer is refused while they hold, and one that gave up waiting leaves no claim behind; ephpm_kv_unlock releases a read hold; argument errors change nothing
--EXTENSIONS--
ephpm
--FILE--
<?php
$n = 't50:doc';
$r1 = ephpm_kv_lock_read($n, 30, 0.0, null, $f1);
$r2 = ephpm_kv_lock_read($n, 30, 0.0, null, $f2);
var_dump(preg_match('/^[0-9a-f]{32}$/', $r1), $r1 !== $r2, $f1 > 0, $f2 > $f1);
var_dump(ephpm_kv_lock_info($n));
$fx = 'untouched';
var_dump(ephpm_kv_lock($n, 30, 0.0, null, $fx), $fx);                // a writer is refused: false, 0
var_dump(ephpm_kv_setnx($n, 'x'), ephpm_kv_del_if_eq($n, $r1));      // set_nx sees it held, del_if_eq unequal
var_dump(ephpm_kv_get($n)[0] === "\0");                              // the reader record, not a token

// A writer that waited for the readers and gave up leaves no claim behind
// (a claim ends with its writer's wait, give or take the moment between
// the writer's clock and the store's): a reader gets in within 0.1 s.
var_dump(ephpm_kv_lock($n, 30, 0.2));
$r3 = ephpm_kv_lock_read($n, 30, 0.1, 'reader-three');
var_dump($r3, ephpm_kv_lock_info($n)['holders']);

var_dump(ephpm_kv_unlock($n, $r1), ephpm_kv_unlock($n, $r1), ephpm_kv_unlock($n, 'nobody'));
var_dump(ephpm_kv_unlock($n, $r2), ephpm_kv_unlock($n, $r3), ephpm_kv_lock_info($n));

// Free again: a writer gets it, and readers wait for the writer.
$w = ephpm_kv_lock($n, 30, 0.0, null, $fw);
var_dump($fw > $f2, ephpm_kv_get($n) === $w, ephpm_kv_lock_read($n, 30, 0.05));
var_dump(ephpm_kv_lock_info($n), ephpm_kv_unlock($n, $w));

// The same token cannot read twice.
$r = ephpm_kv_lock_read($n, 30, 0.0, 'twice');
try {
    ephpm_kv_lock_read($n, 30, 0.0, 'twice');
} catch (Ephpm\KvException $e) {
    echo get_class($e), ' ', $e->getCode() === Ephpm\KvException::INVALID_ARGUMENT ? 'INVALID_ARGUMENT' : $e->getCode(), "\n";
}
var_dump(ephpm_kv_lock_info($n)['holders'], ephpm_kv_unlock($n, $r));

foreach ([
    fn () => ephpm_kv_lock_read('', 30),
    fn () => ephpm_kv_lock_read($n, 0),
    fn () => ephpm_kv_lock_read($n, 30, -1.0),
    fn () => ephpm_kv_lock_read($n, 30, 0.0, ''),
    fn () => ephpm_kv_lock_read($n, 30, 0.0, str_repeat('t', 256)),
    fn () => ephpm_kv_lock($n, 30, 0.0, str_repeat('t', 256)),
] as $call) {
    try {
        $call();
    } catch (ValueError $e) {
        echo $e->getMessage(), "\n";
    }
}
var_dump(ephpm_kv_lock_info($n), ephpm_kv_lock_read($n, 30, 0.0, str_repeat('t', 255)) === str_repeat('t', 255));
ephpm_kv_del($n);
?>
--EXPECT--
int(1)
bool(true)
bool(true)
bool(true)
array(2) {
  ["mode"]=>
  string(6) "shared"
  ["holders"]=>
  int(2)
}
bool(false)
int(0)
bool(false)
bool(false)
bool(true)
bool(false)
string(12) "reader-three"
int(3)
bool(true)
bool(false)
bool(false)
bool(true)
bool(true)
NULL
bool(true)
bool(true)
bool(false)
array(2) {
  ["mode"]=>
  string(9) "exclusive"
  ["holders"]=>
  int(1)
}
bool(true)
Ephpm\KvException INVALID_ARGUMENT
int(1)
bool(true)
ephpm_kv_lock_read(): Argument #1 ($name) must not be empty
ephpm_kv_lock_read(): Argument #2 ($ttl) must be between 1 and 2147483647 seconds
ephpm_kv_lock_read(): Argument #3 ($wait) must be between 0 and 2147483647 seconds
ephpm_kv_lock_read(): Argument #4 ($token) must not be empty
ephpm_kv_lock_read(): Argument #4 ($token) must not be longer than 255 bytes
ephpm_kv_lock(): Argument #4 ($token) must not be longer than 255 bytes
NULL
bool(true)
