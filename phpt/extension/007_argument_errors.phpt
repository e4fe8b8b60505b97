--TEST--
ephpm: bad arguments throw ValueError/TypeError/ArgumentCountError and change nothing
--EXTENSIONS--
ephpm
--FILE--
<?php
declare(strict_types=1);

function attempt(string $what, callable $f): void {
    try {
        $r = $f();
        echo "$what: no error, returned ", var_export($r, true), "\n";
    } catch (Throwable $e) {
        echo "$what: ", get_class($e), ': ', $e->getMessage(), "\n";
    }
}

ephpm_kv_set('t7:k', 'old');
$long = str_repeat('k', 4097);
$max = str_repeat('k', 4096);

attempt('get empty', fn () => ephpm_kv_get(''));
attempt('set empty', fn () => ephpm_kv_set('', 'v'));
attempt('setnx empty', fn () => ephpm_kv_setnx('', 'v'));
attempt('del empty', fn () => ephpm_kv_del(''));
attempt('del_if_eq empty', fn () => ephpm_kv_del_if_eq('', 't'));
attempt('get long', fn () => ephpm_kv_get($long));
attempt('set long', fn () => ephpm_kv_set($long, 'v'));
attempt('del long', fn () => ephpm_kv_del($long));
attempt('set max', fn () => ephpm_kv_set($max, 'v'));
attempt('set ttl -1', fn () => ephpm_kv_set('t7:k', 'new', -1));
attempt('setnx ttl -1', fn () => ephpm_kv_setnx('t7:new', 'new', -1));
attempt('set ttl huge', fn () => ephpm_kv_set('t7:k', 'new', PHP_INT_MAX));
attempt('set ttl 2^31', fn () => ephpm_kv_set('t7:k', 'new', 2147483648));
attempt('set ttl max', fn () => ephpm_kv_set('t7:maxttl', 'v', 2147483647));
attempt('set array', fn () => ephpm_kv_set('t7:k', ['new']));
attempt('set int strict', fn () => ephpm_kv_set('t7:k', 5));
attempt('get null', fn () => ephpm_kv_get(null));
attempt('set ttl string', fn () => ephpm_kv_set('t7:k', 'new', '5'));
attempt('get no args', fn () => ephpm_kv_get());
attempt('del_if_eq 1 arg', fn () => ephpm_kv_del_if_eq('t7:k'));
attempt('set 4 args', fn () => ephpm_kv_set('t7:k', 'new', 1, 2));

var_dump(ephpm_kv_get('t7:k'));
var_dump(ephpm_kv_get('t7:new'));
?>
--EXPECT--
get empty: ValueError: ephpm_kv_get(): Argument #1 ($key) must not be empty
set empty: ValueError: ephpm_kv_set(): Argument #1 ($key) must not be empty
setnx empty: ValueError: ephpm_kv_setnx(): Argument #1 ($key) must not be empty
del empty: ValueError: ephpm_kv_del(): Argument #1 ($key) must not be empty
del_if_eq empty: ValueError: ephpm_kv_del_if_eq(): Argument #1 ($key) must not be empty
get long: ValueError: ephpm_kv_get(): Argument #1 ($key) must not be longer than 4096 bytes
set long: ValueError: ephpm_kv_set(): Argument #1 ($key) must not be longer than 4096 bytes
del long: ValueError: ephpm_kv_del(): Argument #1 ($key) must not be longer than 4096 bytes
set max: no error, returned true
set ttl -1: ValueError: ephpm_kv_set(): Argument #3 ($ttl) must be between 0 and 2147483647 seconds
setnx ttl -1: ValueError: ephpm_kv_setnx(): Argument #3 ($ttl) must be between 0 and 2147483647 seconds
set ttl huge: ValueError: ephpm_kv_set(): Argument #3 ($ttl) must be between 0 and 2147483647 seconds
set ttl 2^31: ValueError: ephpm_kv_set(): Argument #3 ($ttl) must be between 0 and 2147483647 seconds
set ttl max: no error, returned true
set array: TypeError: ephpm_kv_set(): Argument #2 ($value) must be of type string, array given
set int strict: TypeError: ephpm_kv_set(): Argument #2 ($value) must be of type string, int given
get null: TypeError: ephpm_kv_get(): Argument #1 ($key) must be of type string, null given
set ttl string: TypeError: ephpm_kv_set(): Argument #3 ($ttl) must be of type int, string given
get no args: ArgumentCountError: ephpm_kv_get() expects exactly 1 argument, 0 given
del_if_eq 1 arg: ArgumentCountError: ephpm_kv_del_if_eq() expects exactly 2 arguments, 1 given
set 4 args: ArgumentCountError: ephpm_kv_set() expects at most 3 arguments, 4 given
string(3) "old"
NULL
