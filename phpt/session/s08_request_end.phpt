--TEST--
session handler: no lock survives the request, after exit(), an uncaught exception or a fatal error (php -S)
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
--FILE--
<?php
require __DIR__ . '/../inc/server.inc';
$url = ephpm_test_server();
$inspect = fn ($sid) => json_decode(ephpm_http_get("$url/session.php?do=inspect&sid=$sid"), true);

$t1 = ephpm_http_get("$url/session.php?do=token&sid=s08a");
$t2 = ephpm_http_get("$url/session.php?do=token&sid=s08a");
var_dump(preg_match('/^[0-9a-f]{32}$/', $t1), preg_match('/^[0-9a-f]{32}$/', $t2), $t1 !== $t2);
var_dump($inspect('s08a')['lock']);

echo ephpm_http_get("$url/session.php?do=exit&sid=s08b"), "\n";
var_dump($inspect('s08b'));

ephpm_http_get("$url/session.php?do=throw&sid=s08c");
var_dump($inspect('s08c'));

ephpm_http_get("$url/session.php?do=fatal&sid=s08d");
var_dump($inspect('s08d')['lock']);
?>
--EXPECT--
int(1)
int(1)
bool(true)
NULL
held:yes
array(2) {
  ["lock"]=>
  NULL
  ["data"]=>
  string(14) "by|s:4:"exit";"
}
array(2) {
  ["lock"]=>
  NULL
  ["data"]=>
  string(15) "by|s:5:"throw";"
}
NULL
