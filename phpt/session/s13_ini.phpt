--TEST--
session handler: ini settings, their defaults and validation; phpinfo() lists them
--EXTENSIONS--
ephpm
session
--FILE--
<?php
foreach (['ephpm.session_locking', 'ephpm.session_lock_ttl', 'ephpm.session_lock_wait', 'ephpm.session_lock_timeout_action'] as $k) {
    echo "$k=", ini_get($k), "\n";
}
var_dump(ini_set('ephpm.session_lock_ttl', '0'));
var_dump(ini_set('ephpm.session_lock_wait', '-1'));
var_dump(ini_set('ephpm.session_lock_timeout_action', 'sometimes'));
var_dump(ini_set('ephpm.session_lock_timeout_action', 'readonly'), ini_get('ephpm.session_lock_timeout_action'));
var_dump(ini_set('ephpm.session_lock_wait', '2.5'), ini_get('ephpm.session_lock_wait'));
ob_start();
phpinfo(INFO_MODULES);
$info = ob_get_clean();
var_dump(str_contains($info, 'ephpm.session_lock_timeout_action => readonly => proceed'));
?>
--EXPECTF--
ephpm.session_locking=1
ephpm.session_lock_ttl=30
ephpm.session_lock_wait=30
ephpm.session_lock_timeout_action=proceed

Warning: ini_set(): ephpm.session_lock_ttl must be between 1 and 2147483647 seconds, "0" given in %s on line %d
bool(false)

Warning: ini_set(): ephpm.session_lock_wait must be between 0 and 2147483647 seconds, "-1" given in %s on line %d
bool(false)

Warning: ini_set(): ephpm.session_lock_timeout_action must be proceed, fail or readonly, "sometimes" given in %s on line %d
bool(false)
string(7) "proceed"
string(8) "readonly"
string(2) "30"
string(3) "2.5"
bool(true)
