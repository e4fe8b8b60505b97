--TEST--
ephpm_kv_incr, ephpm_kv_decr, ephpm_kv_incr_by: atomic counters, TTL on create, errors
--EXTENSIONS--
ephpm
--FILE--
<?php
var_dump(ephpm_kv_incr('t15:c'));
var_dump(ephpm_kv_incr('t15:c', 10));
var_dump(ephpm_kv_decr('t15:c'));
var_dump(ephpm_kv_decr('t15:c', 20));
var_dump(ephpm_kv_incr_by('t15:c', 100));
var_dump(ephpm_kv_get('t15:c'));

// An hour, so that what is left of it shows it whatever this host's pace.
var_dump(ephpm_kv_incr('t15:ttl', 1, 3600), ephpm_kv_ttl('t15:ttl') > 3000);
var_dump(ephpm_kv_incr('t15:ttl', 1, 5), ephpm_kv_ttl('t15:ttl') > 3000);  // kept, not reset

ephpm_kv_set('t15:text', 'abc');
ephpm_kv_set('t15:max', (string) PHP_INT_MAX);
foreach ([
    fn () => ephpm_kv_incr('t15:text'),
    fn () => ephpm_kv_incr('t15:max'),
    fn () => ephpm_kv_decr('t15:c', PHP_INT_MIN),
    fn () => ephpm_kv_incr_by('t15:c'),
] as $f) {
    try {
        var_dump($f());
    } catch (Ephpm\KvException $e) {
        echo 'KvException ', $e->getCode(), ': ', $e->getMessage(), "\n";
    } catch (Error $e) {
        echo get_class($e), ': ', $e->getMessage(), "\n";
    }
}
var_dump(ephpm_kv_get('t15:text'), ephpm_kv_get('t15:max') === (string) PHP_INT_MAX);
foreach (['007', '-0', '+1'] as $v) {    // not integers as Redis reads them, on either backend
    ephpm_kv_set('t15:odd', $v);
    try { var_dump(ephpm_kv_incr('t15:odd')); } catch (Ephpm\KvException $e) { echo "$v: ", $e->getCode(), "\n"; }
}
?>
--EXPECTF--
int(1)
int(11)
int(10)
int(-10)
int(90)
string(2) "90"
int(1)
bool(true)
int(2)
bool(true)
KvException 7: ephpm_kv_incr(): the stored value is not an integer (%s)
KvException 8: ephpm_kv_incr(): the result would overflow a 64-bit integer (%s)
ValueError: ephpm_kv_decr(): Argument #2 ($by) must be greater than -9223372036854775808
ArgumentCountError: ephpm_kv_incr_by() expects at least 2 arguments, 1 given
string(3) "abc"
bool(true)
007: 7
-0: 7
+1: 7
