--TEST--
ephpm_kv_expire_if_eq refreshes a lock only for the holder of its token
--EXTENSIONS--
ephpm
--FILE--
<?php
// A lock of 30 s, extended to an hour: its TTL shows which applies, with
// no second of this host's pace in the balance (as "still held after a
// lock of 1 s ran out" would be: the refresh had to come within that 1 s).
$token = ephpm_kv_lock('t14:lock', 30);
var_dump(ephpm_kv_expire_if_eq('t14:lock', 'not-the-token', 3600));
var_dump(($ttl = ephpm_kv_ttl('t14:lock')) > 0 && $ttl <= 30);   // untouched
var_dump(ephpm_kv_expire_if_eq('t14:lock', $token, 3600));
var_dump(ephpm_kv_ttl('t14:lock') > 30);             // extended
var_dump(ephpm_kv_get('t14:lock') === $token);
var_dump(ephpm_kv_expire_if_eq('t14:none', $token, 60));
ephpm_kv_set('t14:empty', '');            // an empty token is a token: it matches an empty value
var_dump(ephpm_kv_expire_if_eq('t14:empty', '', 3600), ephpm_kv_ttl('t14:empty') > 30);
?>
--EXPECT--
bool(false)
bool(true)
bool(true)
bool(true)
bool(true)
bool(false)
bool(true)
bool(true)
