--TEST--
ephpm_kv_del counts removed keys; ephpm_kv_del_if_eq removes only on an exact, live match
--EXTENSIONS--
ephpm
--FILE--
<?php
var_dump(ephpm_kv_del('t5:none'));
ephpm_kv_set('t5:k', 'v');
var_dump(ephpm_kv_del('t5:k'));
var_dump(ephpm_kv_del('t5:k'));

ephpm_kv_set('t5:lock', 'token');
var_dump(ephpm_kv_del_if_eq('t5:lock', 'other'));
var_dump(ephpm_kv_del_if_eq('t5:lock', 'toke'));
var_dump(ephpm_kv_del_if_eq('t5:lock', "token\0"));
var_dump(ephpm_kv_get('t5:lock'));
var_dump(ephpm_kv_del_if_eq('t5:lock', 'token'));
var_dump(ephpm_kv_get('t5:lock'));
var_dump(ephpm_kv_del_if_eq('t5:lock', 'token'));

// An expired entry never matches, and is not counted by del.
ephpm_kv_set('t5:exp', 'token', 1);
ephpm_kv_set('t5:exp2', 'v', 1);
usleep(1_100_000);
var_dump(ephpm_kv_del_if_eq('t5:exp', 'token'));
var_dump(ephpm_kv_del('t5:exp2'));

// An empty token matches only an empty value.
ephpm_kv_set('t5:empty', '');
var_dump(ephpm_kv_del_if_eq('t5:empty', ''));
?>
--EXPECT--
int(0)
int(1)
int(0)
bool(false)
bool(false)
bool(false)
string(5) "token"
bool(true)
NULL
bool(false)
bool(false)
int(0)
bool(true)
