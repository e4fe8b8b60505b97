--TEST--
ephpm_kv_expire_if_eq refreshes a lock only for the holder of its token
--EXTENSIONS--
ephpm
--FILE--
<?php
$token = ephpm_kv_lock('t14:lock', 1);
var_dump(ephpm_kv_expire_if_eq('t14:lock', 'not-the-token', 60));
var_dump(ephpm_kv_ttl('t14:lock'));
var_dump(ephpm_kv_expire_if_eq('t14:lock', $token, 60));
var_dump(ephpm_kv_ttl('t14:lock'));
usleep(1_100_000);                       // past the first TTL: still held
var_dump(ephpm_kv_get('t14:lock') === $token);
var_dump(ephpm_kv_expire_if_eq('t14:none', $token, 60));
ephpm_kv_set('t14:empty', '');            // an empty token is a token: it matches an empty value
var_dump(ephpm_kv_expire_if_eq('t14:empty', '', 60), ephpm_kv_ttl('t14:empty'));
?>
--EXPECT--
bool(false)
int(1)
bool(true)
int(60)
bool(true)
bool(false)
bool(true)
int(60)
