--TEST--
ephpm_kv_lock with the caller's own token (a framework's lock owner)
--EXTENSIONS--
ephpm
--FILE--
<?php
var_dump(ephpm_kv_lock('t23:a', 30, 0.0, 'owner-literal'));          // an interned string
$owner = bin2hex(random_bytes(16));
var_dump(ephpm_kv_lock('t23:b', 30, 0.0, $owner) === $owner);       // a fresh one
var_dump(ephpm_kv_lock('t23:b', 30, 0.05, 'someone-else'));         // held: false
var_dump(ephpm_kv_get('t23:b') === $owner);
var_dump(ephpm_kv_unlock('t23:b', $owner), ephpm_kv_unlock('t23:a', 'owner-literal'));
try {
    ephpm_kv_lock('t23:c', 30, 0.0, '');
} catch (ValueError $e) {
    echo $e->getMessage(), "\n";
}
var_dump(ephpm_kv_exists('t23:c'));
?>
--EXPECT--
string(13) "owner-literal"
bool(true)
bool(false)
bool(true)
bool(true)
bool(true)
ephpm_kv_lock(): Argument #4 ($token) must not be empty
bool(false)
