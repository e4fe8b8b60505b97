<?php
/**
 * A minimal WordPress object cache on Redis through phpredis: a baseline for
 * bench/wordpress.sh, not a product. It has the shape of ephpm's drop-in (php/wordpress/
 * object-cache.php): a runtime cache (a PHP array for the request) in front
 * of the shared store, one key per entry named SALT + blog + group + key,
 * global and non-persistent groups, batch reads. What it lacks on purpose:
 * `alloptions` is one array written whole (concurrent option updates lose
 * each other's), a flush empties the Redis database (every site), `replace` and
 * `incr` are a read then a write.
 *
 * Installed as wp-content/object-cache.php. Needs the redis extension and
 * WP_REDIS_HOST and WP_REDIS_PORT (default 127.0.0.1:6379); each worker keeps
 * one persistent connection. Values are PHP-serialized.
 */

defined('ABSPATH') || exit;
require_once __DIR__ . '/baseline.php'; // __DIR__ is this file's own folder, also through wp-content's symlink

class WP_Object_Cache extends Ephpm_Bench_Object_Cache
{
    const NAME = 'phpredis';

    /** @var Redis */
    private $redis;

    public function __construct()
    {
        parent::__construct();
        $this->redis = new Redis();
        $this->redis->pconnect(defined('WP_REDIS_HOST') ? WP_REDIS_HOST : '127.0.0.1', defined('WP_REDIS_PORT') ? (int) WP_REDIS_PORT : 6379);
    }

    protected function fetch($id, &$found)
    {
        $raw = $this->redis->get($id);
        $found = is_string($raw);
        return $found ? unserialize($raw) : null;
    }

    protected function fetch_many(array $ids)
    {
        $hits = [];
        foreach ($this->redis->mget($ids) as $i => $raw) {
            if (is_string($raw)) {
                $hits[$ids[$i]] = unserialize($raw);
            }
        }
        return $hits;
    }

    protected function store($id, $data, $expire)
    {
        return $expire > 0 ? $this->redis->setex($id, $expire, serialize($data)) : $this->redis->set($id, serialize($data));
    }

    protected function store_if_absent($id, $data, $expire)
    {
        return (bool) $this->redis->set($id, serialize($data), $expire > 0 ? ['nx', 'ex' => $expire] : ['nx']);
    }

    protected function exists($id)
    {
        return (bool) $this->redis->exists($id);
    }

    protected function remove($id)
    {
        return $this->redis->del($id) > 0;
    }

    protected function clear()
    {
        return $this->redis->flushDB();
    }
}
