--TEST--
ephpm_kv_remember: computes once and stores with the TTL; an exception or a non-string releases the lock and stores nothing; nested fills of other keys; a held fill times out; argument errors
--EXTENSIONS--
ephpm
--FILE--
<?php
$calls = 0;
$compute = function () use (&$calls) { $calls++; return "value $calls"; };
var_dump(ephpm_kv_remember('t42:a', 60, $compute), ephpm_kv_remember('t42:a', 60, $compute), $calls);
var_dump(ephpm_kv_ttl('t42:a') > 50, ephpm_kv_exists('remember_lock:t42:a'));

// An exception reaches the caller; the lock is gone and the next call computes.
try {
    ephpm_kv_remember('t42:e', 60, function () { throw new RuntimeException('boom'); });
} catch (RuntimeException $e) {
    echo "caught: ", $e->getMessage(), "\n";
}
var_dump(ephpm_kv_exists('remember_lock:t42:e'), ephpm_kv_exists('t42:e'));
var_dump(ephpm_kv_remember('t42:e', 60, fn() => 'second try'));

// A non-string result: TypeError, nothing stored, the lock released.
try {
    ephpm_kv_remember('t42:t', 60, fn() => 42);
} catch (TypeError $e) {
    echo $e->getMessage(), "\n";
}
var_dump(ephpm_kv_exists('remember_lock:t42:t'), ephpm_kv_exists('t42:t'));

// Nested fills of other keys, each under its own lock.
var_dump(ephpm_kv_remember('t42:outer', 60, function () {
    return 'outer(' . ephpm_kv_remember('t42:inner', 60, function () {
        return 'inner, lock held: ' . var_export(ephpm_kv_exists('remember_lock:t42:inner'), true);
    }) . ', outer lock held: ' . var_export(ephpm_kv_exists('remember_lock:t42:outer'), true) . ')';
}));

// A nested fill of the same key would wait for itself: refused at once,
// and the outer fill goes on.
var_dump(ephpm_kv_remember('t42:self', 60, function () {
    try {
        ephpm_kv_remember('t42:self', 60, fn() => 'inner');
    } catch (ValueError $e) {
        echo $e->getMessage(), "\n";
    }
    return 'outer';
}));

// Another holder keeps the fill lock (for an hour: however slow the host,
// it outlasts the wait): the wait runs out, $compute never runs.
ephpm_kv_setnx('remember_lock:t42:held', 'someone else', 3600);
$t = hrtime(true);
try {
    ephpm_kv_remember('t42:held', 60, function () { echo "never\n"; return 'x'; }, 0.2);
} catch (Ephpm\KvException $e) {
    $waited = (hrtime(true) - $t) / 1e9;
    // Not before its 0.2 s wait (300 s: a hang catch, not a speed bound).
    var_dump($e->getCode(), $waited >= 0.2 && $waited < 300);
    echo $e->getMessage(), "\n";
}
// A value stored meanwhile is returned without the lock.
ephpm_kv_set('t42:held', 'stored by the holder');
var_dump(ephpm_kv_remember('t42:held', 60, fn() => 'never', 0.0));
ephpm_kv_del('remember_lock:t42:held');

foreach ([
    fn() => ephpm_kv_remember('', 60, $compute),
    fn() => ephpm_kv_remember(str_repeat('k', 4083), 60, $compute),
    fn() => ephpm_kv_remember('t42:x', -1, $compute),
    fn() => ephpm_kv_remember('t42:x', 60, $compute, -1.0),
    fn() => ephpm_kv_remember('t42:x', 60, 'no_such_function'),
] as $f) {
    try {
        $f();
        echo "no error\n";
    } catch (TypeError | ValueError $e) {
        echo get_class($e), ": ", $e->getMessage(), "\n";
    }
}
var_dump(ephpm_kv_remember(str_repeat('k', 4082), 1, fn() => 'longest key'));
?>
--EXPECT--
string(7) "value 1"
string(7) "value 1"
int(1)
bool(true)
bool(false)
caught: boom
bool(false)
bool(false)
string(10) "second try"
ephpm_kv_remember(): Return value of argument #3 ($compute) must be of type string, int returned
bool(false)
bool(false)
string(52) "outer(inner, lock held: true, outer lock held: true)"
ephpm_kv_remember(): Argument #1 ($key) is being computed by an enclosing ephpm_kv_remember() call, which this one would wait for
string(5) "outer"
int(0)
bool(true)
ephpm_kv_remember(): another caller held the fill of this key for the whole wait of 0.200 s
string(20) "stored by the holder"
ValueError: ephpm_kv_remember(): Argument #1 ($key) must not be empty
ValueError: ephpm_kv_remember(): Argument #1 ($key) must not be longer than 4082 bytes (its lock key is longer by 14)
ValueError: ephpm_kv_remember(): Argument #2 ($ttl) must be between 0 and 2147483647 seconds
ValueError: ephpm_kv_remember(): Argument #4 ($wait) must be between 0 and 2147483647 seconds
TypeError: ephpm_kv_remember(): Argument #3 ($compute) must be a valid callback, function "no_such_function" not found or invalid function name
string(11) "longest key"
