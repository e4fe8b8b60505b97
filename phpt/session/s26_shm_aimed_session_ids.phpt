--TEST--
session handler on a shared-memory segment: 3000 session ids a client chose to land in one shard by the unseeded hash (xxh64, layout version 7) and 1 KiB sessions leave locks and sets succeeding there
--EXTENSIONS--
ephpm
session
hash
--SKIPIF--
<?php if (!in_array('xxh64', hash_algos(), true)) die('skip no xxh64'); ?>
--FILE--
<?php
require __DIR__ . '/../inc/child.inc';
$segment = 's26-' . getmypid();
echo ephpm_child(<<<'PHP'
    /* $n keys of $prefix and a counter, 32 characters, that the unseeded
     * hash put in shard 0 of a 4 MiB segment's 4: a key of more than 16
     * bytes hashed by xxh64 with seed 0, the shard its low 2 bits, as any
     * client could compute it (a session key hashes by its id). */
    function aimed(string $prefix, int $n): array {
        $keys = [];
        for ($i = 0; count($keys) < $n; $i++) {
            $k = $prefix . str_pad((string) $i, 32 - strlen($prefix), '0', STR_PAD_LEFT);
            if ((hexdec(substr(hash('xxh64', $k), -1)) & 3) === 0) {
                $keys[] = $k;
            }
        }
        return $keys;
    }
    // The flood: a login page's visits with chosen ids, a session each.
    $data = str_repeat('d', 1000);
    foreach (aimed('flood', 3000) as $sid) {
        session_id($sid);
        session_start();
        $_SESSION['csrf'] = $data;
        session_write_close();
    }
    $s = ephpm_kv_stats();
    echo 'backend: ', $s['backend'], "\n";
    echo 'within the budget: ', var_export($s['session_bytes'] <= $s['session_limit'], true), "\n";
    // Locks and cache writes whose names the same hash put in that shard.
    $locks = $sets = 0;
    foreach (aimed('s26lock', 200) as $name) {
        try {
            $locks += is_string(ephpm_kv_lock($name, 60)) ? 1 : 0;
        } catch (Ephpm\KvException $e) {
            $error ??= $e->getMessage();
        }
    }
    foreach (aimed('s26cache', 100) as $key) {
        try {
            $sets += ephpm_kv_set($key, $data, 3600) ? 1 : 0;
        } catch (Ephpm\KvException $e) {
            $error ??= $e->getMessage();
        }
    }
    echo "locks: $locks of 200\n", "sets: $sets of 100\n", $error ?? '', "\n";
    PHP, ['ephpm.kv_backend' => "shm://$segment", 'ephpm.kv_memory_limit' => '4M', 'ephpm.kv_eviction' => 'allkeys-lru',
          'session.save_handler' => 'ephpm', 'session.use_cookies' => '0', 'session.cache_limiter' => '',
          'session.serialize_handler' => 'php']);

foreach (glob("/dev/shm/ephpm-$segment.*") as $file) {
    unlink($file);
}
?>
--EXPECT--
backend: shm
within the budget: true
locks: 200 of 200
sets: 100 of 100
