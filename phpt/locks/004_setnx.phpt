--TEST--
ephpm_kv_setnx: true only for the call that inserted; a losing call changes nothing
--EXTENSIONS--
ephpm
--FILE--
<?php
var_dump(ephpm_kv_setnx('t4:lock', 'first', 30));
var_dump(ephpm_kv_setnx('t4:lock', 'second', 30));
var_dump(ephpm_kv_get('t4:lock'));
ephpm_kv_set('t4:plain', 'set');
var_dump(ephpm_kv_setnx('t4:plain', 'nx'));
var_dump(ephpm_kv_get('t4:plain'));
var_dump(ephpm_kv_del('t4:lock'));
var_dump(ephpm_kv_setnx('t4:lock', 'third'));
var_dump(ephpm_kv_get('t4:lock'));
?>
--EXPECT--
bool(true)
bool(false)
string(5) "first"
bool(false)
string(3) "set"
int(1)
bool(true)
string(5) "third"
