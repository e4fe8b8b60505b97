--TEST--
ephpm.kv_compression = none, the documented default word, is accepted as php.ini writes it (PHP's ini reader turns a bare none or off into ""); lz4 and a wrong word still behave
--EXTENSIONS--
ephpm
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
$code = 'try { var_dump(ephpm_kv_set("c", str_repeat("x", 4096)), ephpm_kv_get("c") === str_repeat("x", 4096), ephpm_kv_stats()["compression"]); } catch (Throwable $e) { echo get_class($e), ": ", preg_replace("/.*refused /", "", $e->getMessage()), "\n"; }';
foreach (['none', 'off', 'lz4', 'zip'] as $word) {
    // The in-process store, whatever backend this run's php.ini names: the
    // setting's reading is what is tested, and Redis reports no compression.
    echo "$word:\n", ephpm_child($code, ['ephpm.kv_compression' => $word, 'ephpm.kv_backend' => 'memory']);
}
?>
--EXPECT--
none:
bool(true)
bool(true)
string(4) "none"
off:
bool(true)
bool(true)
string(4) "none"
lz4:
bool(true)
bool(true)
string(3) "lz4"
zip:
Ephpm\KvException: ephpm.kv_compression: kv: invalid argument: compression "zip" is not none or lz4
