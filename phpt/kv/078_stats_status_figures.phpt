--TEST--
ephpm_kv_stats: the status page's figures: the rate ring, the segment's shards, the backend's facts
--EXTENSIONS--
ephpm
--FILE--
<?php
$s = ephpm_kv_stats();
$backend = $s['backend'];
var_dump(is_string($s['facts']), is_array($s['rates']), is_array($s['shards']));
switch (true) {
    case $backend === 'memory':
        // In-process: rates in 10 s intervals, no shards, nothing to say.
        var_dump($s['rate_interval_ms'] === 10000, $s['shards'] === [], $s['facts'] === '');
        break;
    case $backend === 'shm':
        $keys = array_sum(array_column($s['shards'], 'keys'));
        $ok = count($s['shards']) >= 1 && $keys === $s['keys'];
        foreach ($s['shards'] as $sh) {
            $ok = $ok && $sh['heap_size'] > 0 && $sh['heap_free'] <= $sh['heap_size']
                && $sh['largest_free'] <= $sh['heap_free'] && $sh['bytes_used'] >= 0;
        }
        var_dump($s['rate_interval_ms'] === 10000, $ok, str_starts_with($s['facts'], 'segment /'));
        break;
    default:
        // Redis keeps no ring; its facts name the server and its policy.
        var_dump($s['rate_interval_ms'] === 0, $s['shards'] === [], str_contains($s['facts'], 'maxmemory-policy'));
}
foreach ($s['rates'] as $r) {
    if (array_keys($r) !== ['hits', 'misses', 'sets', 'set_nx_wins', 'set_nx_losses', 'evictions', 'expirations']) {
        echo "bad rate\n";
    }
}
var_dump(count($s['rates']) <= 30);
?>
--EXPECT--
bool(true)
bool(true)
bool(true)
bool(true)
bool(true)
bool(true)
bool(true)
