--TEST--
ephpm_kv_lock / ephpm_kv_unlock: 128-bit random tokens, waiting, the holder's release only, argument errors
--EXTENSIONS--
ephpm
--FILE--
<?php
$a = ephpm_kv_lock('t17:job', 3600);                  // held throughout, however slow the host
var_dump(preg_match('/^[0-9a-f]{32}$/', $a));
var_dump(ephpm_kv_lock('t17:job', 30));                    // held: no wait, false

$t = hrtime(true);
var_dump(ephpm_kv_lock('t17:job', 30, 0.3));               // waits 0.3 s, then false
$waited = (hrtime(true) - $t) / 1e9;
// Not before the wait; false: ended by it, not by the TTL (the 300 s bound
// is a hang catch, not a speed bound).
var_dump($waited >= 0.3 && $waited < 300);

var_dump(ephpm_kv_unlock('t17:job', 'not-the-token'));
var_dump(ephpm_kv_unlock('t17:job', $a));
var_dump(ephpm_kv_unlock('t17:job', $a));                  // already released
$b = ephpm_kv_lock('t17:job', 30);
var_dump($b !== false && $b !== $a);                       // fresh per acquisition
ephpm_kv_unlock('t17:job', $b);

// A foreign lock with a 1 s TTL: the wait ends when it expires, not before
// (timed from before the TTL starts; the 300 s wait is a hang catch).
$t = hrtime(true);
ephpm_kv_setnx('t17:other', 'foreign', 1);
$c = ephpm_kv_lock('t17:other', 30, 300.0);
$waited = (hrtime(true) - $t) / 1e9;
var_dump($c !== false, $waited > 0.9, ephpm_kv_get('t17:other') === $c);

foreach ([
    fn () => ephpm_kv_lock('t17:x', 0),
    fn () => ephpm_kv_lock('t17:x', -5),
    fn () => ephpm_kv_lock('t17:x', 30, -1.0),
    fn () => ephpm_kv_lock('t17:x', 30, NAN),
    fn () => ephpm_kv_lock('', 30),
] as $f) {
    try {
        $f();
    } catch (ValueError $e) {
        echo $e->getMessage(), "\n";
    }
}
var_dump(ephpm_kv_exists('t17:x'));
?>
--EXPECT--
int(1)
bool(false)
bool(false)
bool(true)
bool(false)
bool(true)
bool(false)
bool(true)
bool(true)
bool(true)
bool(true)
ephpm_kv_lock(): Argument #2 ($ttl) must be between 1 and 2147483647 seconds
ephpm_kv_lock(): Argument #2 ($ttl) must be between 1 and 2147483647 seconds
ephpm_kv_lock(): Argument #3 ($wait) must be between 0 and 2147483647 seconds
ephpm_kv_lock(): Argument #3 ($wait) must be between 0 and 2147483647 seconds
ephpm_kv_lock(): Argument #1 ($name) must not be empty
bool(false)
