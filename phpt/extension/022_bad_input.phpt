--TEST--
ephpm: every function rejects bad input with ValueError/TypeError/ArgumentCountError, changes nothing, and makes no noise
--EXTENSIONS--
ephpm
--INI--
memory_limit=-1
ephpm.kv_memory_limit=0
--FILE--
<?php
declare(strict_types=1);

// name => [arguments that work, index of the key, index of a TTL (or null), index of a value/token (or null)]
$functions = [
    'ephpm_kv_get'          => [['t22:k'], 0, null, null],
    'ephpm_kv_set'          => [['t22:k', 'v', 0], 0, 2, 1],
    'ephpm_kv_setnx'        => [['t22:k', 'v', 0], 0, 2, 1],
    'ephpm_kv_del'          => [['t22:k'], 0, null, null],
    'ephpm_kv_del_if_eq'    => [['t22:k', 'v'], 0, null, 1],
    'ephpm_kv_exists'       => [['t22:k'], 0, null, null],
    'ephpm_kv_ttl'          => [['t22:k'], 0, null, null],
    'ephpm_kv_pttl'         => [['t22:k'], 0, null, null],
    'ephpm_kv_expire'       => [['t22:k', 10], 0, 1, null],
    'ephpm_kv_expire_if_eq' => [['t22:k', 'v', 10], 0, 2, 1],
    'ephpm_kv_incr'         => [['t22:n', 1, 0], 0, 2, null],
    'ephpm_kv_decr'         => [['t22:n', 1, 0], 0, 2, null],
    'ephpm_kv_incr_by'      => [['t22:n', 1, 0], 0, 2, null],
    'ephpm_kv_lock'         => [['t22:l', 5, 0.0], 0, 1, null],
    'ephpm_kv_unlock'       => [['t22:l', 'v'], 0, null, 1],
];
$badKeys = ['' => 'empty', str_repeat('k', 4097) => 'over 4096 bytes'];
$badTtls = [-1, 2147483648, PHP_INT_MAX, PHP_INT_MIN];

ephpm_kv_flush_all();
ephpm_kv_set('t22:k', 'v');
$before = ephpm_kv_stats()['keys'];

$outcomes = [];
$try = function (string $fn, array $args) use (&$outcomes): void {
    try {
        $fn(...$args);
        $outcomes["$fn: no error"] = ($outcomes["$fn: no error"] ?? 0) + 1;
    } catch (Throwable $e) {
        $outcomes[get_class($e)] = ($outcomes[get_class($e)] ?? 0) + 1;
    }
};
foreach ($functions as $fn => [$args, $keyAt, $ttlAt, $valueAt]) {
    foreach ($badKeys as $key => $why) {
        $a = $args;
        $a[$keyAt] = (string) $key;
        $try($fn, $a);
    }
    if ($ttlAt !== null) {
        foreach ($badTtls as $ttl) {
            $a = $args;
            $a[$ttlAt] = $ttl;
            $try($fn, $a);
        }
    }
    $a = $args;
    $a[$keyAt] = 5;                      // not a string under strict_types
    $try($fn, $a);
    $try($fn, array_merge($args, range(1, 4)));     // too many arguments
    if ($fn !== 'ephpm_kv_incr' && $fn !== 'ephpm_kv_decr') {
        $try($fn, []);                   // too few
    }
    if ($valueAt !== null) {
        $a = $args;
        $a[$valueAt] = [];
        $try($fn, $a);
    }
}
ksort($outcomes);
print_r($outcomes);

// A value one byte over the 256 MiB limit is refused (025 stores one at it).
$big = str_repeat('x', 256 * 1024 * 1024 + 1);
try {
    ephpm_kv_set('t22:big', $big);
} catch (ValueError $e) {
    echo $e->getMessage(), "\n";
}
unset($big);

// Keys are bytes: NUL bytes, invalid UTF-8 and a key of exactly 4096 bytes work.
foreach (["t22:\0nul", "t22:\xff\xfe", str_repeat('m', 4096)] as $key) {
    ephpm_kv_set($key, 'ok');
    echo bin2hex(substr($key, 0, 8)), ' ', ephpm_kv_get($key), ' ', ephpm_kv_del($key), "\n";
}

var_dump(ephpm_kv_stats()['keys'] === $before, ephpm_kv_get('t22:k'), ephpm_kv_exists('t22:n'), ephpm_kv_exists('t22:l'));
var_dump(error_get_last());
?>
--EXPECT--
Array
(
    [ArgumentCountError] => 28
    [TypeError] => 20
    [ValueError] => 62
)
ephpm_kv_set(): Argument #2 ($value) must not be longer than 268435456 bytes
7432323a006e756c ok 1
7432323afffe ok 1
6d6d6d6d6d6d6d6d ok 1
bool(true)
string(1) "v"
bool(false)
bool(false)
NULL
