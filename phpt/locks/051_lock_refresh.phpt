--TEST--
ephpm_kv_lock_refresh: the holder's token renews its own hold (read or exclusive), another token renews nothing, a lapsed hold is gone; argument errors
--EXTENSIONS--
ephpm
--FILE--
<?php
$n = 't51:doc';
// The renewed holds start at 30 s and are renewed past that (to an hour),
// which the name's TTL shows: no host is too slow for the renewal to come
// before they lapse. $other's hold of 1 s is left to lapse.
$kept = ephpm_kv_lock_read($n, 30);
$other = ephpm_kv_lock_read($n, 1);
var_dump(ephpm_kv_lock_refresh($n, $kept, 3600), ephpm_kv_lock_refresh($n, 'nobody', 3600));
var_dump(ephpm_kv_ttl($n) > 30);                    // $kept's hold was renewed
usleep(1300000);                                    // $other's hold lapses
var_dump(ephpm_kv_lock_info($n)['holders']);
var_dump(ephpm_kv_lock_refresh($n, $other, 30), ephpm_kv_unlock($n, $other));   // lapsed: gone
var_dump(ephpm_kv_unlock($n, $kept), ephpm_kv_lock_info($n));

$w = ephpm_kv_lock($n, 30);
var_dump(ephpm_kv_lock_refresh($n, $w, 3600), ephpm_kv_ttl($n) > 30);
var_dump(ephpm_kv_lock_refresh($n, 'nobody', 3600), ephpm_kv_unlock($n, $w));
var_dump(ephpm_kv_lock_refresh($n, $w, 3600));      // released: nothing to renew

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
bool(true)
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
