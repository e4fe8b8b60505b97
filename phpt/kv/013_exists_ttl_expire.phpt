--TEST--
ephpm_kv_exists, ephpm_kv_ttl, ephpm_kv_pttl, ephpm_kv_expire
--EXTENSIONS--
ephpm
--FILE--
<?php
var_dump(ephpm_kv_exists('t13:k'), ephpm_kv_ttl('t13:k'), ephpm_kv_pttl('t13:k'));
ephpm_kv_set('t13:k', 'v');
var_dump(ephpm_kv_exists('t13:k'), ephpm_kv_ttl('t13:k'), ephpm_kv_pttl('t13:k'));
// What is left of 100 s: all of it, less the time this host took since the
// set (its pace is not asserted: $ms is measured, not bounded).
$t = hrtime(true);
ephpm_kv_set('t13:t', 'v', 100);
$p = ephpm_kv_pttl('t13:t');
$s = ephpm_kv_ttl('t13:t');
$ms = (hrtime(true) - $t) / 1e6 + 10;                  // + the coarse clocks' lag
var_dump($s <= 100 && $s >= 100 - (int) ceil($ms / 1000), $p > 100000 - $ms && $p <= 100000);

var_dump(ephpm_kv_expire('t13:k', 3600));              // give it a TTL
var_dump(ephpm_kv_ttl('t13:k') > 3000);
var_dump(ephpm_kv_expire('t13:t', 0), ephpm_kv_ttl('t13:t'));   // 0: no expiry
var_dump(ephpm_kv_expire('t13:none', 10));
var_dump(ephpm_kv_expire('t13:k', 1));                 // and a short one, which runs out
usleep(1_100_000);
var_dump(ephpm_kv_exists('t13:k'), ephpm_kv_ttl('t13:k'), ephpm_kv_expire('t13:k', 10));
try {
    ephpm_kv_expire('t13:t', -1);
} catch (ValueError $e) {
    echo $e->getMessage(), "\n";
}
?>
--EXPECT--
bool(false)
int(-2)
int(-2)
bool(true)
int(-1)
int(-1)
bool(true)
bool(true)
bool(true)
bool(true)
bool(true)
int(-1)
bool(false)
bool(true)
bool(false)
int(-2)
bool(false)
ephpm_kv_expire(): Argument #2 ($ttl) must be between 0 and 2147483647 seconds
