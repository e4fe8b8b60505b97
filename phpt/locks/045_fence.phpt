--TEST--
fencing tokens: ephpm_kv_lock(..., &$fence), ephpm_kv_fence(), ephpm_kv_set_fenced() refuses a stale fence; release, a lock taken without asking and a flush keep fences growing
--EXTENSIONS--
ephpm
--FILE--
<?php
// One hash tag: on a Redis Cluster the data and the lock share a slot.
$lock = '{t45}:lock';
$key = '{t45}:data';
var_dump(ephpm_kv_fence('{t45}:never:' . bin2hex(random_bytes(6))));   // never granted
$base = ephpm_kv_fence($lock);        // a shared store's fences outlive this test

$a = ephpm_kv_lock($lock, 30, 0.0, null, $fa);
var_dump(is_string($a), is_int($fa), $fa > $base, ephpm_kv_fence($lock) === $fa);
$fx = 'untouched';
var_dump(ephpm_kv_lock($lock, 30, 0.0, null, $fx), $fx);              // held: false, fence 0
var_dump(ephpm_kv_set_fenced($key, 'by a', $lock, $fa));
var_dump(ephpm_kv_unlock($lock, $a), ephpm_kv_fence($lock) === $fa);   // the release keeps it
var_dump(ephpm_kv_set_fenced($key, 'by a, late', $lock, $fa));         // nobody was granted since

$b = ephpm_kv_lock($lock, 30, fence: $fb);
var_dump($fb > $fa);
var_dump(ephpm_kv_set_fenced($key, 'stale', $lock, $fa), ephpm_kv_get($key));
var_dump(ephpm_kv_set_fenced($key, 'by b', $lock, $fb, 60), ephpm_kv_get($key), ephpm_kv_ttl($key) > 0);
ephpm_kv_unlock($lock, $b);

// A lock taken without asking for its fence is a grant all the same.
$c = ephpm_kv_lock($lock, 30);
var_dump(ephpm_kv_fence($lock) > $fb, ephpm_kv_set_fenced($key, 'stale b', $lock, $fb));
ephpm_kv_unlock($lock, $c);

// An expired lock keeps its fence; the next grant is above it.
$d = ephpm_kv_lock($lock, 1, 0.0, null, $fd);
$e = ephpm_kv_lock($lock, 30, 300.0, null, $fe);                      // a hang catch
var_dump($e !== false, $fe > $fd);
ephpm_kv_unlock($lock, $e);

// A flush does not let fences go back.
ephpm_kv_flush_all();
$f = ephpm_kv_lock($lock, 30, 0.0, null, $ff);
var_dump($ff > $fe);
ephpm_kv_unlock($lock, $f);

// $fence bound to a typed property that takes no int: a TypeError, and no
// lock left behind that the caller cannot know of.
class T45 { public array $f = []; }
$o = new T45();
try {
    ephpm_kv_lock('t45:typed', 30, 0.0, null, $o->f);
} catch (TypeError $ex) {
    echo $ex->getMessage(), "\n";
}
var_dump(ephpm_kv_exists('t45:typed'));

foreach ([
    fn () => ephpm_kv_fence(''),
    fn () => ephpm_kv_set_fenced('', 'v', $lock, 1),
    fn () => ephpm_kv_set_fenced($key, 'v', '', 1),
    fn () => ephpm_kv_set_fenced($key, 'v', $lock, 0),
    fn () => ephpm_kv_set_fenced($key, 'v', $lock, -3),
    fn () => ephpm_kv_set_fenced($key, 'v', $lock, 1, -1),
] as $fn) {
    try {
        $fn();
    } catch (ValueError $ex) {
        echo $ex->getMessage(), "\n";
    }
}
var_dump(ephpm_kv_exists($key));
?>
--EXPECT--
int(0)
bool(true)
bool(true)
bool(true)
bool(true)
bool(false)
int(0)
bool(true)
bool(true)
bool(true)
bool(true)
bool(true)
bool(false)
string(10) "by a, late"
bool(true)
string(4) "by b"
bool(true)
bool(true)
bool(false)
bool(true)
bool(true)
bool(true)
Cannot assign int to reference held by property T45::$f of type array
bool(false)
ephpm_kv_fence(): Argument #1 ($name) must not be empty
ephpm_kv_set_fenced(): Argument #1 ($key) must not be empty
ephpm_kv_set_fenced(): Argument #3 ($lock) must not be empty
ephpm_kv_set_fenced(): Argument #4 ($fence) must be greater than 0 (a fence ephpm_kv_lock() returned)
ephpm_kv_set_fenced(): Argument #4 ($fence) must be greater than 0 (a fence ephpm_kv_lock() returned)
ephpm_kv_set_fenced(): Argument #5 ($ttl) must be between 0 and 2147483647 seconds
bool(false)
