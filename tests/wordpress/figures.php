<?php
/*
 * A must-use plugin of tests/wordpress (installed by lib.sh): every response
 * carries the request's figures as headers. The page is held in an output
 * buffer, so the headers can still be sent on the way out (at shutdown,
 * before WordPress flushes its buffers).
 *   X-WP-Queries       database queries of the request ($wpdb->num_queries)
 *   X-WP-Cache-Hits    $wp_object_cache->cache_hits
 *   X-WP-Cache-Misses  $wp_object_cache->cache_misses
 *   X-WP-Cache         "external" with a persistent object cache, else "runtime"
 *   X-WP-Cache-Class   the object cache's class
 *   X-WP-CPU-Us        CPU time (user and system) the worker spent on the
 *                      request, in microseconds, from wp-config.php on
 */
ob_start();
add_action('shutdown', static function () {
    global $wpdb, $wp_object_cache;
    if (headers_sent()) {
        return;
    }
    header('X-WP-Queries: ' . (int) $wpdb->num_queries);
    header('X-WP-Cache-Hits: ' . (int) ($wp_object_cache->cache_hits ?? -1));
    header('X-WP-Cache-Misses: ' . (int) ($wp_object_cache->cache_misses ?? -1));
    header('X-WP-Cache: ' . (wp_using_ext_object_cache() ? 'external' : 'runtime'));
    header('X-WP-Cache-Class: ' . (is_object($wp_object_cache) ? get_class($wp_object_cache) : '-'));
    if (isset($GLOBALS['ephpm_test_rusage'])) {
        $cpu = static fn (array $r): int => $r['ru_utime.tv_sec'] * 1000000 + $r['ru_utime.tv_usec'] + $r['ru_stime.tv_sec'] * 1000000 + $r['ru_stime.tv_usec'];
        header('X-WP-CPU-Us: ' . ($cpu(getrusage()) - $cpu($GLOBALS['ephpm_test_rusage'])));
    }
}, 0);
