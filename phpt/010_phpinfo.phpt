--TEST--
ephpm: phpinfo() section shows the ABI version and whether the library is loaded
--EXTENSIONS--
ephpm
--INI--
ephpm.library=
--FILE--
<?php
function section(): string {
    ob_start();
    phpinfo(INFO_MODULES);
    $all = ob_get_clean();
    $start = strpos($all, "\nephpm\n");
    return substr($all, $start, strpos($all, "Directive", $start) - $start);
}
echo section();
ephpm_kv_get('t10:any');
echo preg_replace('~^Library => /.*/libephpm\.so$~m', 'Library => [path]/libephpm.so', section());
?>
--EXPECT--
ephpm

ephpm support => enabled
Extension version => 0.1.0
ABI version (extension) => 1
Library loaded => no (loaded on first use in each process)


ephpm

ephpm support => enabled
Extension version => 0.1.0
ABI version (extension) => 1
Library loaded => yes
Library => [path]/libephpm.so
ABI version (library) => 1 (table of 136 bytes)
