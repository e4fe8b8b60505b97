--TEST--
session handler: use_strict_mode accepts only existing ids; create_sid hands out unused ids
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.use_strict_mode=1
session.cache_limiter=
--FILE--
<?php
session_id('s04unknownid');
session_start();
$new = session_id();
var_dump($new !== 's04unknownid', strlen($new) >= 22);
$_SESSION['x'] = 1;
session_write_close();
var_dump(ephpm_kv_get('session:s04unknownid'), ephpm_kv_get("session:$new") !== null);

// The id that now exists is accepted.
session_id($new);
session_start();
var_dump(session_id() === $new, $_SESSION);
session_write_close();
?>
--EXPECT--
bool(true)
bool(true)
NULL
bool(true)
bool(true)
array(1) {
  ["x"]=>
  int(1)
}
