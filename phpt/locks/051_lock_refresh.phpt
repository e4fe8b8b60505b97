--TEST--
ephpm_kv_lock_refresh: the holder's token renews its own hold (read or exclusive), another token renews nothing, a lapsed hold is gone; argument errors
--EXTENSIONS--
ephpm
--FILE--
<?php
$n = 't51:doc';
$short = ephpm_kv_lock_read($n, 1);
$other = ephpm_kv_lock_read($n, 1);
var_dump(ephpm_kv_lock_refresh($n, $short, 30), ephpm_kv_lock_refresh($n, 'nobody', 30));
usleep(1300000);                                    // $other's hold lapses, $short's was renewed
var_dump(ephpm_kv_lock_info($n)['holders']);
var_dump(ephpm_kv_lock_refresh($n, $other, 30), ephpm_kv_unlock($n, $other));   // lapsed: gone
var_dump(ephpm_kv_unlock($n, $short), ephpm_kv_lock_info($n));

$w = ephpm_kv_lock($n, 1);
var_dump(ephpm_kv_lock_refresh($n, $w, 60), ephpm_kv_ttl($n) > 50);
var_dump(ephpm_kv_lock_refresh($n, 'nobody', 60), ephpm_kv_unlock($n, $w));
var_dump(ephpm_kv_lock_refresh($n, $w, 60));        // released: nothing to renew

foreach ([
    fn () => ephpm_kv_lock_refresh('', 'tok', 30),
    fn () => ephpm_kv_lock_refresh($n, 'tok', 0),
] as $call) {
    try {
        $call();
    } catch (ValueError $e) {
        echo $e->getMessage(), "\n";
    }
}
?>
--EXPECT--
bool(true)
bool(false)
int(1)
bool(false)
bool(false)
bool(true)
NULL
bool(true)
bool(true)
bool(false)
bool(true)
bool(false)
ephpm_kv_lock_refresh(): Argument #1 ($name) must not be empty
ephpm_kv_lock_refresh(): Argument #3 ($ttl) must be between 1 and 2147483647 seconds
