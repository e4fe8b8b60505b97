--TEST--
session handler: the lock is held during the request with a fresh 32-hex token, and released after
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
--FILE--
<?php
$tokens = [];
for ($i = 0; $i < 3; $i++) {
    session_id('s07');
    session_start();
    $tokens[] = ephpm_kv_get('session_lock:s07');
    session_write_close();
    var_dump(ephpm_kv_get('session_lock:s07'));
}
foreach ($tokens as $t) {
    var_dump(preg_match('/^[0-9a-f]{32}$/', $t));
}
var_dump(count(array_unique($tokens)));
?>
--EXPECT--
NULL
NULL
NULL
int(1)
int(1)
int(1)
int(3)
