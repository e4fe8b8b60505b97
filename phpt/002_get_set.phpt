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

// Sizes around the extension's 8 KiB stack buffer, and far beyond it.
foreach ([8191, 8192, 8193, 1 << 20] as $n) {
    $v = random_bytes($n);
    ephpm_kv_set("t2:big:$n", $v);
    echo $n, ': ', ephpm_kv_get("t2:big:$n") === $v ? 'same' : 'DIFFERENT', "\n";
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
8191: same
8192: same
8193: same
1048576: same
bool(true)
string(2) "42"
