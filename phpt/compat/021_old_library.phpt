--TEST--
ephpm: with an older library the original functions work and newer ones say UNSUPPORTED; a wrong ABI is refused naming both versions
--EXTENSIONS--
ephpm
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
$dir = ephpm_modules_dir() . '/test';
$code = <<<'PHP'
    var_dump(ephpm_kv_get('k'), ephpm_kv_set('k', 'v'));
    foreach ([fn () => ephpm_kv_exists('k'), fn () => ephpm_kv_lock('k', 5), fn () => ephpm_kv_lock_read('k', 5),
              fn () => ephpm_kv_lock_info('k'), fn () => ephpm_kv_stats()] as $f) {
        try { $f(); } catch (Ephpm\KvException $e) {
            echo $e->getCode() === Ephpm\KvException::UNSUPPORTED ? 'UNSUPPORTED: ' : 'other: ', $e->getMessage(), "\n";
        }
    }
    var_dump(ephpm_kv_unlock('k', 't'));   // del_if_eq on a table without lock_release
    set_error_handler(function ($no, $msg) { echo "warning: $msg\n"; return true; });
    var_dump(session_start());
    PHP;
echo str_replace($dir, '[dir]', ephpm_child($code, ['ephpm.library' => "$dir/libfake_v1.so", 'session.save_handler' => 'ephpm', 'session.use_cookies' => '0']));
echo str_replace($dir, '[dir]', ephpm_child('try { ephpm_kv_get("k"); } catch (Ephpm\KvException $e) { echo $e->getCode(), ": ", $e->getMessage(), "\n"; }',
    ['ephpm.library' => "$dir/libfake_abi99.so"]));
?>
--EXPECTF--
NULL
bool(true)
UNSUPPORTED: ephpm_kv_exists(): not supported by the loaded library [dir]/libfake_v1.so: its table (48 bytes) is older than this extension's (%d bytes); install the library built with this extension
UNSUPPORTED: ephpm_kv_lock(): not supported by the loaded library [dir]/libfake_v1.so: its table (48 bytes) is older than this extension's (%d bytes); install the library built with this extension
UNSUPPORTED: ephpm_kv_lock_read(): not supported by the loaded library [dir]/libfake_v1.so: its table (48 bytes) is older than this extension's (%d bytes); install the library built with this extension
UNSUPPORTED: ephpm_kv_lock_info(): not supported by the loaded library [dir]/libfake_v1.so: its table (48 bytes) is older than this extension's (%d bytes); install the library built with this extension
UNSUPPORTED: ephpm_kv_stats(): not supported by the loaded library [dir]/libfake_v1.so: its table (48 bytes) is older than this extension's (%d bytes); install the library built with this extension
bool(false)
warning: session_start(): ephpm: session handler: the loaded library [dir]/libfake_v1.so is too old (table of 48 bytes has no session members)
warning: session_start(): Failed to initialize storage module: ephpm (path: %S)
bool(false)
5: ephpm: cannot use the library [dir]/libfake_abi99.so: it provides ABI version 99, this extension needs version 1
