--TEST--
ephpm_kv_get/ephpm_kv_set: hit, miss, overwrite, empty and large values
--EXTENSIONS--
ephpm
--FILE--
<?php
var_dump(ephpm_kv_get('t2:missing'));
var_dump(ephpm_kv_set('t2:k', 'v1'));
var_dump(ephpm_kv_get('t2:k'));
var_dump(ephpm_kv_set('t2:k', 'second value'));
var_dump(ephpm_kv_get('t2:k'));

var_dump(ephpm_kv_set('t2:empty', ''));
var_dump(ephpm_kv_get('t2:empty'));
var_dump(ephpm_kv_set('t2:one', 'x'));
var_dump(ephpm_kv_get('t2:one'));

// Sizes around the extension's get buffer (8167 bytes; values from 3048
// bytes are handed out as the buffer itself), and far beyond it. Each is
// read twice, with other reads between, so a handed-out buffer that were
// reused would show.
$sizes = [2, 3047, 3048, 4096, 8166, 8167, 8168, 8191, 8192, 8193, 1 << 20];
$values = [];
foreach ($sizes as $n) {
    $values[$n] = random_bytes($n);
    ephpm_kv_set("t2:big:$n", $values[$n]);
}
$first = [];
foreach ($sizes as $n) {
    $first[$n] = ephpm_kv_get("t2:big:$n");
}
foreach ($sizes as $n) {
    $again = ephpm_kv_get("t2:big:$n");
    echo $n, ': ', $first[$n] === $values[$n] && $again === $values[$n] ? 'same' : 'DIFFERENT', "\n";
}
// Values that are not strings are coerced like any string parameter.
var_dump(ephpm_kv_set('t2:int', 42), ephpm_kv_get('t2:int'));
?>
--EXPECT--
NULL
bool(true)
string(2) "v1"
bool(true)
string(12) "second value"
bool(true)
string(0) ""
bool(true)
string(1) "x"
2: same
3047: same
3048: same
4096: same
8166: same
8167: same
8168: same
8191: same
8192: same
8193: same
1048576: same
bool(true)
string(2) "42"
