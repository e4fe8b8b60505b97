--TEST--
session handler, ephpm.session_lock_mode=optimistic: data the serializer does not re-encode unchanged is locked as in exclusive mode, with a warning; objects compare by value
--EXTENSIONS--
ephpm
session
--INI--
session.save_handler=ephpm
session.use_cookies=0
session.cache_limiter=
ephpm.session_lock_mode=optimistic
--FILE--
<?php
echo "-- a duplicate key decodes to data that encodes differently: locked, not merged\n";
ephpm_kv_set('session:s24', 'a|i:1;b|i:5;a|i:2;');
session_id('s24');
session_start();
var_dump($_SESSION);
var_dump(is_string(ephpm_kv_get('session_lock:s24')));     // held for the whole request
ephpm_kv_set('session:s24', 'c|i:3;');                      // what a lock-ignoring writer would do
$_SESSION['b'] = 6;
var_dump(session_write_close());
var_dump(ephpm_kv_get('session:s24'));                      // exclusive: the request's data, whole
var_dump(ephpm_kv_get('session_lock:s24'));

echo "-- objects: a changed property is a change, an equal object is not\n";
$o = new ArrayObject([1, 2]);
ephpm_kv_set('session:s24o', 'o|' . serialize($o) . 'p|' . serialize((object) ['v' => 1]));
session_id('s24o');
session_start();
var_dump(ephpm_kv_get('session_lock:s24o'));
ephpm_kv_set('session:s24o', 'o|' . serialize($o) . 'p|' . serialize((object) ['v' => 1]) . 'q|i:7;');
$_SESSION['o'][] = 3;
$_SESSION['p'] = (object) ['v' => 1];                       // a new instance, equal
var_dump(session_write_close());
session_id('s24o');
session_start(['read_and_close' => true]);
var_dump(count($_SESSION['o']), $_SESSION['p']->v, $_SESSION['q']);
?>
--EXPECTF--
-- a duplicate key decodes to data that encodes differently: locked, not merged

Warning: session_start(): ephpm: session s24: session.serialize_handler=php does not decode and re-encode its data unchanged, so this request's changes cannot be merged; it holds the session lock as ephpm.session_lock_mode=exclusive does in %s on line %d
array(2) {
  ["a"]=>
  int(2)
  ["b"]=>
  int(5)
}
bool(true)
bool(true)
string(12) "a|i:2;b|i:6;"
NULL
-- objects: a changed property is a change, an equal object is not
NULL
bool(true)
int(3)
int(1)
int(7)
