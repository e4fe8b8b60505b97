<?php
/**
 * A minimal WordPress object cache on APCu: a baseline for bench/wordpress.sh
 * (and the whole-array `alloptions` demonstration of tests/wordpress/run.sh),
 * not a product. It has the shape of ephpm's drop-in (php/wordpress/
 * object-cache.php): a runtime cache (a PHP array for the request) in front
 * of the shared store, one key per entry named SALT + blog + group + key,
 * global and non-persistent groups, batch reads. What it lacks on purpose:
 * `alloptions` is one array written whole (concurrent option updates lose
 * each other's), a flush clears all of APCu (every site), `replace` and
 * `incr` are a read then a write.
 *
 * Installed as wp-content/object-cache.php. Needs the apcu extension with
 * apc.enabled=1 (under php-fpm, its segment is the pool's).
 */

defined('ABSPATH') || exit;
require_once __DIR__ . '/baseline.php'; // __DIR__ is this file's own folder, also through wp-content's symlink

class WP_Object_Cache extends Ephpm_Bench_Object_Cache
{
    const NAME = 'APCu';

    protected function fetch($id, &$found)
    {
        return apcu_fetch($id, $found);
    }

    protected function fetch_many(array $ids)
    {
        return apcu_fetch($ids);
    }

    protected function store($id, $data, $expire)
    {
        return apcu_store($id, $data, $expire);
    }

    protected function store_if_absent($id, $data, $expire)
    {
        return apcu_add($id, $data, $expire);
    }

    protected function exists($id)
    {
        return apcu_exists($id);
    }

    protected function remove($id)
    {
        return apcu_delete($id);
    }

    protected function clear()
    {
        return apcu_clear_cache();
    }
}
