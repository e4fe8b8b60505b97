<?php
/*
 * Soak: up to 5 M mixed operations (values of 16 B to 4 KiB, TTLs, locks,
 * counters) against a store under its memory limit with LRU eviction, for
 * at most 60 s. Prints the process's RSS as it goes; after the warm-up it
 * must stay flat. Run by bench/run.sh with ephpm.kv_memory_limit=32M and
 * ephpm.kv_eviction=allkeys-lru.
 */
declare(strict_types=1);

function rss_kib(): int
{
    preg_match('/VmRSS:\s+(\d+)/', file_get_contents('/proc/self/status'), $m);
    return (int) $m[1];
}

$total = 5_000_000;
$deadline = hrtime(true) + 60 * 1_000_000_000;
$values = [];
foreach ([16, 64, 256, 1024, 4096] as $n) {
    $values[] = random_bytes($n);
}
mt_srand(42);
$start = hrtime(true);
$samples = [];
for ($i = 1; $i <= $total; $i++) {
    $k = 'soak:' . mt_rand(0, 99_999);
    switch ($i % 8) {
        case 0: case 1: case 2:
            ephpm_kv_get($k);
            break;
        case 3: case 4:
            ephpm_kv_set($k, $values[$i % 5], mt_rand(0, 5));
            break;
        case 5:
            $t = ephpm_kv_lock('soak:lock:' . ($i % 100), 5);
            if ($t !== false) {
                ephpm_kv_unlock('soak:lock:' . ($i % 100), $t);
            }
            break;
        case 6:
            ephpm_kv_incr('soak:n:' . ($i % 1000), 1, 3);
            break;
        case 7:
            ephpm_kv_del($k);
            break;
    }
    if ($i % 500_000 === 0) {
        $s = ephpm_kv_stats();
        $samples[] = $rss = rss_kib();
        printf("%5.1f M ops  %6.1f s  RSS %6.1f MiB  keys %7d  used %5.1f MiB  evictions %8d\n",
            $i / 1e6, (hrtime(true) - $start) / 1e9, $rss / 1024, $s['keys'], $s['bytes_used'] / 1048576, $s['evictions']);
        if (hrtime(true) > $deadline) {
            break;
        }
    }
}
$ops = $i > $total ? $total : $i;
$secs = (hrtime(true) - $start) / 1e9;
$warm = $samples[min(1, count($samples) - 1)];
$end = end($samples);
printf("\n%.1f M ops in %.1f s (%.0f k ops/s); RSS after warm-up %.1f MiB, at the end %.1f MiB (%+.1f %%)\n",
    $ops / 1e6, $secs, $ops / $secs / 1000, $warm / 1024, $end / 1024, ($end - $warm) * 100 / $warm);
