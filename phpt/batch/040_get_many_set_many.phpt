--TEST--
ephpm_kv_get_many / ephpm_kv_set_many: batches in one call, missing keys absent, integer keys, large values, bad input writes nothing
--EXTENSIONS--
ephpm
--FILE--
<?php
var_dump(ephpm_kv_set_many(['t40:a' => 'alpha', 40 => 'forty', "t40:\0bin" => "\0\1", 't40:empty' => '', 't40:big' => str_repeat('x', 100000)], 60));
$r = ephpm_kv_get_many(['t40:a', 40, 't40:none', "t40:\0bin", 't40:empty', 't40:big', '40']);
var_dump(array_map(fn($k) => is_int($k) ? $k : bin2hex($k), array_keys($r)));
var_dump($r['t40:a'], $r[40], $r["t40:\0bin"] === "\0\1", $r['t40:empty'], strlen($r['t40:big']));
var_dump(ephpm_kv_ttl('t40:a') > 50, ephpm_kv_ttl('40') > 50);
var_dump(ephpm_kv_get_many([]), ephpm_kv_set_many([]));

// 100 keys of 64 bytes, with every other one missing.
$batch = [];
for ($i = 0; $i < 100; $i += 2) {
    $batch["t40:k$i"] = str_repeat(chr(65 + $i % 26), 64);
}
ephpm_kv_set_many($batch);
$keys = [];
for ($i = 0; $i < 100; $i++) {
    $keys[] = "t40:k$i";
}
var_dump(ephpm_kv_get_many($keys) === $batch);

// Bad input: TypeError or ValueError, and nothing written.
$bad = [
    [fn() => ephpm_kv_get_many(['t40:a', 1.5])],
    [fn() => ephpm_kv_get_many(['t40:a', null])],
    [fn() => ephpm_kv_get_many(['t40:a', ''])],
    [fn() => ephpm_kv_get_many([str_repeat('k', 4097)])],
    [fn() => ephpm_kv_set_many(['t40:w1' => 'v', 't40:w2' => 2])],
    [fn() => ephpm_kv_set_many(['t40:w1' => 'v', 't40:w2' => null])],
    [fn() => ephpm_kv_set_many(['t40:w1' => 'v', '' => 'v'])],
    [fn() => ephpm_kv_set_many(['t40:w1' => 'v', str_repeat('k', 4097) => 'v'])],
    [fn() => ephpm_kv_set_many(['t40:w1' => 'v'], -1)],
];
foreach ($bad as [$f]) {
    try {
        $f();
        echo "no error\n";
    } catch (TypeError | ValueError $e) {
        echo get_class($e), ": ", $e->getMessage(), "\n";
    }
}
var_dump(ephpm_kv_exists('t40:w1'));

// A library older than the batch members: UNSUPPORTED, not a crash.
require __DIR__ . '/../inc/child.inc';
$dir = ephpm_modules_dir() . '/test';
echo str_replace($dir, '[dir]', ephpm_child('foreach ([fn () => ephpm_kv_get_many(["k"]), fn () => ephpm_kv_set_many(["k" => "v"]),
        fn () => ephpm_kv_remember("k", 5, fn () => "v")] as $f) {
    try { $f(); } catch (Ephpm\KvException $e) { echo $e->getCode() === Ephpm\KvException::UNSUPPORTED ? "UNSUPPORTED\n" : $e->getMessage(); }
}', ['ephpm.library' => "$dir/libfake_v1.so"]));
?>
--EXPECT--
bool(true)
array(5) {
  [0]=>
  string(10) "7434303a61"
  [1]=>
  int(40)
  [2]=>
  string(16) "7434303a0062696e"
  [3]=>
  string(18) "7434303a656d707479"
  [4]=>
  string(14) "7434303a626967"
}
string(5) "alpha"
string(5) "forty"
bool(true)
string(0) ""
int(100000)
bool(true)
bool(true)
array(0) {
}
bool(true)
bool(true)
TypeError: ephpm_kv_get_many(): Argument #1 ($keys) must contain only strings and integers, float given
TypeError: ephpm_kv_get_many(): Argument #1 ($keys) must contain only strings and integers, null given
ValueError: ephpm_kv_get_many(): Argument #1 ($keys) must not contain an empty key
ValueError: ephpm_kv_get_many(): Argument #1 ($keys) must not contain a key longer than 4096 bytes
TypeError: ephpm_kv_set_many(): Argument #1 ($values) must contain only string values, int given
TypeError: ephpm_kv_set_many(): Argument #1 ($values) must contain only string values, null given
ValueError: ephpm_kv_set_many(): Argument #1 ($values) must not contain an empty key
ValueError: ephpm_kv_set_many(): Argument #1 ($values) must not contain a key longer than 4096 bytes
ValueError: ephpm_kv_set_many(): Argument #2 ($ttl) must be between 0 and 2147483647 seconds
bool(false)
UNSUPPORTED
UNSUPPORTED
UNSUPPORTED
