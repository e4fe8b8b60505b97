--TEST--
ephpm: a library whose get_many or scan answer asks for more room at every call is given up on after five calls, with an exception
--EXTENSIONS--
ephpm
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
$dir = ephpm_modules_dir() . '/test';
$code = <<<'PHP'
    foreach ([fn () => ephpm_kv_get_many(['a', 'b']), fn () => ephpm_kv_scan()] as $f) {
        try { $f(); echo "no exception\n"; } catch (Ephpm\KvException $e) {
            echo $e->getCode() === Ephpm\KvException::UNAVAILABLE ? 'UNAVAILABLE: ' : 'other: ', $e->getMessage(), "\n";
        }
    }
    PHP;
echo ephpm_child($code, ['ephpm.library' => "$dir/libfake_growing.so"]);
?>
--EXPECTF--
UNAVAILABLE: ephpm_kv_get_many(): the store's answer did not fit %d bytes after 5 tries (it asked for %d); the outcome is unknown
UNAVAILABLE: ephpm_kv_scan(): the store's page did not fit %d bytes after 5 tries (it asked for %d); the outcome is unknown
