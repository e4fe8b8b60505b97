--TEST--
fencing tokens on a Redis Cluster: a fenced write whose key is not in its lock's slot, and a lock name whose fence cannot share its slot, are refused as invalid, changing nothing
--EXTENSIONS--
ephpm
--SKIPIF--
<?php if (!preg_match('/^rediss?\+cluster:/', ini_get('ephpm.kv_backend'))) die('skip a Redis Cluster only'); ?>
--FILE--
<?php
$t = ephpm_kv_lock('{t47}:lock', 30, 0.0, null, $f);
foreach ([
    fn () => ephpm_kv_set_fenced('t47:data', 'v', '{t47}:lock', $f),
    fn () => ephpm_kv_lock('t47:a}b', 30),
] as $fn) {
    try {
        $fn();
        echo "accepted\n";
    } catch (Ephpm\KvException $e) {
        var_dump($e->getCode() === Ephpm\KvException::INVALID_ARGUMENT, str_contains($e->getMessage(), 'hash tag'));
    }
}
var_dump(ephpm_kv_exists('t47:data'), ephpm_kv_exists('t47:a}b'));
var_dump(ephpm_kv_set_fenced('{t47}:data', 'v', '{t47}:lock', $f));   // one hash tag: accepted
ephpm_kv_unlock('{t47}:lock', $t);
ephpm_kv_del('{t47}:data');
?>
--EXPECT--
bool(true)
bool(true)
bool(true)
bool(true)
bool(false)
bool(false)
bool(true)
