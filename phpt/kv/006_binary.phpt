--TEST--
ephpm: keys and values are binary-safe (NUL bytes, invalid UTF-8)
--EXTENSIONS--
ephpm
--FILE--
<?php
ephpm_kv_set("t6:a\0b", "one\0two");
ephpm_kv_set("t6:a\0c", "other");
ephpm_kv_set("t6:\xff\xfe", "\x80\x81");
var_dump(bin2hex(ephpm_kv_get("t6:a\0b")));
var_dump(ephpm_kv_get("t6:a\0c"));
var_dump(ephpm_kv_get("t6:a"));            // not cut at the NUL byte
var_dump(bin2hex(ephpm_kv_get("t6:\xff\xfe")));
var_dump(ephpm_kv_setnx("t6:a\0b", 'x'));
var_dump(ephpm_kv_del_if_eq("t6:a\0b", "one"));
var_dump(ephpm_kv_del_if_eq("t6:a\0b", "one\0two"));
var_dump(ephpm_kv_del("t6:a\0c"));
var_dump(ephpm_kv_get("t6:a\0c"));
?>
--EXPECT--
string(14) "6f6e650074776f"
string(5) "other"
NULL
string(4) "8081"
bool(false)
bool(false)
bool(true)
int(1)
NULL
