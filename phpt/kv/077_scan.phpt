--TEST--
ephpm_kv_scan: pages cover every key of a prefix once, records say size, TTL and kind, the walk of locks, bad arguments
--EXTENSIONS--
ephpm
--FILE--
<?php
$backend = ephpm_kv_stats()['backend'];
$redis = str_starts_with($backend, 'redis');

// 250 keys under the prefix, some with a TTL, and keys beside it.
$want = [];
$set_at = hrtime(true);
for ($i = 0; $i < 250; $i++) {
    $k = sprintf('t77:k:%03d', $i);
    ephpm_kv_set($k, str_repeat('v', $i % 17), $i % 3 === 0 ? 100 : 0);
    $want[$k] = true;
}
ephpm_kv_set("t77:k:\0bin\xff", 'b');
$want["t77:k:\0bin\xff"] = true;
ksort($want);
ephpm_kv_set('t77:other', 'x');
ephpm_kv_set('t77k', 'x');

// Pages of any size: every key once, only those of the prefix.
foreach ([1, 7, 100, 1000] as $count) {
    $seen = [];
    $cursor = null;
    $pages = 0;
    do {
        foreach (ephpm_kv_scan('t77:k:', $cursor, $count) as $r) {
            $seen[$r['key']] = ($seen[$r['key']] ?? 0) + 1;
        }
        $pages++;
    } while ($cursor !== 0 && $pages < 100000);
    ksort($seen);
    $once = array_filter($seen, fn ($n) => $n === 1);
    echo "count $count: ", count($seen), " keys, ", count($once), " once, ",
        array_keys($seen) == array_keys($want) ? "exactly the prefix's" : "OTHERS: " . bin2hex(implode(',', array_keys(array_diff_key($seen, $want)))), "\n";
}

// One record's fields.
$records = [];
$cursor = 0;
do {
    foreach (ephpm_kv_scan('t77:k:00', $cursor) as $r) {
        $records[$r['key']] = $r;
    }
} while ($cursor !== 0);
ksort($records);
$r = $records['t77:k:003'];
// The TTL left is at most the 100 s given, less the time since (measured,
// not bounded: the walks above take seconds on a loaded host).
$since_ms = intdiv(hrtime(true) - $set_at, 1_000_000);
var_dump($r['kind'], $r['size'], $r['pttl'] > 100000 - $since_ms - 10 && $r['pttl'] <= 100000, $r['holders'], $r['holder_pid']);
var_dump($records['t77:k:001']['pttl'], $records['t77:k:001']['size']);
var_dump(array_keys($r));

// Kinds: session data, a session's lock, a read-held lock, a set_nx lock.
ephpm_kv_set('session:t77sid', 'data', 100);
ephpm_kv_setnx('session_lock:t77sid', 'tok', 100);
$r1 = ephpm_kv_lock_read('t77:rw', 60);
$r2 = ephpm_kv_lock_read('t77:rw', 60);
ephpm_kv_setnx('t77:nx', 'tok', 60);
$walk = function (string $prefix, bool $locksOnly = false) {
    $out = [];
    $cursor = null;
    do {
        foreach (ephpm_kv_scan($prefix, $cursor, 50, $locksOnly) as $r) {
            $out[$r['key']] = $r;
        }
    } while ($cursor !== 0);
    ksort($out);
    return $out;
};
$kinds = fn (string $prefix, bool $locksOnly) => array_map(fn ($r) => $r['kind'] . '/' . $r['holders'], $walk($prefix, $locksOnly));
var_dump($kinds('session:t77', false), $kinds('session_lock:t77', false));
$locks = $kinds('t77:', true);
// Redis keeps a set_nx lock nobody waits for as a plain string.
var_dump($locks['t77:rw'], $locks['t77:nx'] ?? ($redis ? 'lock/1' : 'missing'), count($locks) === ($redis ? 1 : 2));
$all = $kinds('t77:', false);
var_dump($all['t77:rw'], $all['t77:other'], $all['t77:nx'] === ($redis ? 'value/0' : 'lock/1'));
// Waiters: counted by ephpm's stores; unknown on Redis outside a walk of locks.
$w = $walk('t77:nx')['t77:nx']['waiters'];
var_dump($redis ? $w === null : $w === 0);
ephpm_kv_unlock('t77:rw', $r1);
ephpm_kv_unlock('t77:rw', $r2);

// Without $cursor: the first page (Redis takes the count as a hint). An
// empty prefix: every key.
var_dump(count(ephpm_kv_scan('t77:k:', count: 5)) <= ($redis ? 251 : 5));
$n = 0;
$cursor = null;
do {
    $n += count(ephpm_kv_scan('', $cursor, 500));
} while ($cursor !== 0);
var_dump($n >= 254);

// Bad arguments: nothing walked.
$bad = [
    fn () => ephpm_kv_scan(str_repeat('p', 4097)),
    function () { $c = 'x'; ephpm_kv_scan('t77:', $c); },
    function () { $c = 1.5; ephpm_kv_scan('t77:', $c); },
    function () { $c = null; ephpm_kv_scan('t77:', $c, 0); },
    function () { $c = null; ephpm_kv_scan('t77:', $c, 100001); },
    function () { $c = -1; ephpm_kv_scan('t77:', $c); },
    fn () => ephpm_kv_scan([]),
];
foreach ($bad as $f) {
    try {
        $f();
        echo "no error\n";
    } catch (TypeError | ValueError $e) {
        echo get_class($e), ": ", preg_replace('/returned \(.*\)$/', 'returned (...)', $e->getMessage()), "\n";
    }
}

// A library older than scan: UNSUPPORTED, not a crash.
require __DIR__ . '/../inc/child.inc';
$dir = ephpm_modules_dir() . '/test';
echo ephpm_child('try { ephpm_kv_scan(); } catch (Ephpm\KvException $e) { echo $e->getCode() === Ephpm\KvException::UNSUPPORTED ? "UNSUPPORTED\n" : $e->getMessage(); }',
    ['ephpm.library' => "$dir/libfake_v1.so"]);
?>
--CLEAN--
<?php
ephpm_kv_del('session:t77sid');
ephpm_kv_del('session_lock:t77sid');
?>
--EXPECT--
count 1: 251 keys, 251 once, exactly the prefix's
count 7: 251 keys, 251 once, exactly the prefix's
count 100: 251 keys, 251 once, exactly the prefix's
count 1000: 251 keys, 251 once, exactly the prefix's
string(5) "value"
int(3)
bool(true)
int(0)
NULL
int(-1)
int(1)
array(7) {
  [0]=>
  string(3) "key"
  [1]=>
  string(4) "kind"
  [2]=>
  string(4) "size"
  [3]=>
  string(4) "pttl"
  [4]=>
  string(7) "holders"
  [5]=>
  string(7) "waiters"
  [6]=>
  string(10) "holder_pid"
}
array(1) {
  ["session:t77sid"]=>
  string(9) "session/0"
}
array(1) {
  ["session_lock:t77sid"]=>
  string(6) "lock/1"
}
string(13) "lock_shared/2"
string(6) "lock/1"
bool(true)
string(13) "lock_shared/2"
string(7) "value/0"
bool(true)
bool(true)
bool(true)
bool(true)
ValueError: ephpm_kv_scan(): Argument #1 ($prefix) must not be longer than 4096 bytes
TypeError: ephpm_kv_scan(): Argument #2 ($cursor) must be of type ?int, string given
TypeError: ephpm_kv_scan(): Argument #2 ($cursor) must be of type ?int, float given
ValueError: ephpm_kv_scan(): Argument #3 ($count) must be between 1 and 100000
ValueError: ephpm_kv_scan(): Argument #3 ($count) must be between 1 and 100000
ValueError: ephpm_kv_scan(): Argument #2 ($cursor) must be a cursor an earlier call returned (...)
TypeError: ephpm_kv_scan(): Argument #1 ($prefix) must be of type string, array given
UNSUPPORTED
