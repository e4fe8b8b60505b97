--TEST--
session handler: a lazy write under the lock refreshes the TTL and releases the lock in one call; with the lock lost, it refreshes the TTL and leaves the other holder's lock
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
session.lazy_write=1
session.gc_maxlifetime=3600
session.serialize_handler=php
ephpm.session_lock_ttl=1
--FILE--
<?php
session_id('s35');
ephpm_kv_set('session:s35', 'x|i:1;', 30);

// Under the lock: one of 300 s here, which no host's pace outruns.
ini_set('ephpm.session_lock_ttl', '300');
session_start();                                   // reads x|i:1;, holds the lock
var_dump(ephpm_kv_exists('session_lock:s35'));
var_dump(session_write_close());                   // unchanged: update_timestamp
var_dump(ephpm_kv_exists('session_lock:s35'));     // released
var_dump(ephpm_kv_ttl('session:s35') > 30);        // refreshed to gc_maxlifetime
var_dump(ephpm_kv_get('session:s35'));             // the value kept

// The lock (1 s) lapses during the request and another takes it: the
// refresh still happens (it changes no value), the other's lock stays.
ini_set('ephpm.session_lock_ttl', '1');
ephpm_kv_expire('session:s35', 30);
session_start();
usleep(1_200_000);                                 // past ephpm.session_lock_ttl=1
var_dump(ephpm_kv_setnx('session_lock:s35', 'B-token', 30));
var_dump(session_write_close());
var_dump(ephpm_kv_get('session_lock:s35'));
var_dump(ephpm_kv_ttl('session:s35') > 30);
var_dump(ephpm_kv_get('session:s35'));
?>
--EXPECT--
bool(true)
bool(true)
bool(false)
bool(true)
string(6) "x|i:1;"
bool(true)
bool(true)
string(7) "B-token"
bool(true)
string(6) "x|i:1;"
