--TEST--
session handler: max_execution_time reached while waiting for the lock ends the request with PHP's timeout fatal; nothing held, nothing written, the next request is fine
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
ephpm.session_lock_wait=30
--FILE--
<?php
require __DIR__ . '/../inc/server.inc';
$url = ephpm_test_server();
echo ephpm_http_get("$url/session.php?do=hold&sid=s15"), "\n";
$t = microtime(true);
$body = ephpm_http_get("$url/session.php?do=timeout&sid=s15");
$took = microtime(true) - $t;
echo trim(preg_replace('/ in \S+ on line \d+/', '', strip_tags($body))), "\n";
// The 1 s limit ended the wait: PHP's timeout fatal, not the script's
// "not reached" after the 30 s wait. (No upper bound on $took: a loaded
// host, or valgrind, slows the requests around the wait.)
var_dump($took > 0.8);
var_dump(json_decode(ephpm_http_get("$url/session.php?do=inspect&sid=s15"), true));
echo ephpm_http_get("$url/session.php?do=token&sid=s15other") !== '' ? "next request fine\n" : "next request failed\n";
?>
--EXPECTF--
true
Fatal error: Maximum execution time of 1 second exceeded%A
bool(true)
array(2) {
  ["lock"]=>
  string(7) "foreign"
  ["data"]=>
  string(14) "v|s:5:"keep!";"
}
next request fine
