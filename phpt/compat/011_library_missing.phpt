--TEST--
ephpm: a library that cannot be loaded is an Ephpm\KvException naming the path; PHP keeps running
--EXTENSIONS--
ephpm
--INI--
ephpm.library=/nonexistent/libephpm.so
--FILE--
<?php
foreach ([fn () => ephpm_kv_get('k'), fn () => ephpm_kv_setnx('k', 'v')] as $f) {
    try {
        var_dump($f());
    } catch (Ephpm\KvException $e) {
        echo $e->getCode() === Ephpm\KvException::NOT_LOADED ? 'NOT_LOADED' : $e->getCode(), ': ', $e->getMessage(), "\n";
    }
}
echo "still running\n";
?>
--EXPECTF--
NOT_LOADED: ephpm: cannot load the library /nonexistent/libephpm.so (set ephpm.library to its path): /nonexistent/libephpm.so: cannot open shared object file: No such file or directory
NOT_LOADED: ephpm: cannot load the library /nonexistent/libephpm.so (set ephpm.library to its path): /nonexistent/libephpm.so: cannot open shared object file: No such file or directory
still running
