<?php
/*
 * What the minimal baseline object caches of bench/wordpress.sh share
 * (object-cache-apcu.php, object-cache-phpredis.php): WordPress's
 * object-cache functions and a per-request runtime cache in front of a
 * store, the shape of ephpm's drop-in (php/wordpress/object-cache.php).
 * Each drop-in defines WP_Object_Cache as this class over its store's
 * calls. Not a product: no per-site flush, no merged alloptions.
 */

defined('ABSPATH') || exit;

function wp_cache_init()
{
    $GLOBALS['wp_object_cache'] = new WP_Object_Cache();
}

function wp_cache_add($key, $data, $group = '', $expire = 0)
{
    return $GLOBALS['wp_object_cache']->add($key, $data, $group, (int) $expire);
}

function wp_cache_add_multiple(array $data, $group = '', $expire = 0)
{
    $done = [];
    foreach ($data as $key => $value) {
        $done[$key] = $GLOBALS['wp_object_cache']->add($key, $value, $group, (int) $expire);
    }
    return $done;
}

function wp_cache_replace($key, $data, $group = '', $expire = 0)
{
    return $GLOBALS['wp_object_cache']->replace($key, $data, $group, (int) $expire);
}

function wp_cache_set($key, $data, $group = '', $expire = 0)
{
    return $GLOBALS['wp_object_cache']->set($key, $data, $group, (int) $expire);
}

function wp_cache_set_multiple(array $data, $group = '', $expire = 0)
{
    return $GLOBALS['wp_object_cache']->set_multiple($data, $group, (int) $expire);
}

function wp_cache_get($key, $group = '', $force = false, &$found = null)
{
    return $GLOBALS['wp_object_cache']->get($key, $group, $force, $found);
}

function wp_cache_get_multiple($keys, $group = '', $force = false)
{
    return $GLOBALS['wp_object_cache']->get_multiple($keys, $group, $force);
}

function wp_cache_delete($key, $group = '')
{
    return $GLOBALS['wp_object_cache']->delete($key, $group);
}

function wp_cache_delete_multiple(array $keys, $group = '')
{
    $done = [];
    foreach ($keys as $key) {
        $done[$key] = $GLOBALS['wp_object_cache']->delete($key, $group);
    }
    return $done;
}

function wp_cache_incr($key, $offset = 1, $group = '')
{
    return $GLOBALS['wp_object_cache']->incr($key, (int) $offset, $group);
}

function wp_cache_decr($key, $offset = 1, $group = '')
{
    return $GLOBALS['wp_object_cache']->incr($key, -(int) $offset, $group);
}

function wp_cache_flush()
{
    return $GLOBALS['wp_object_cache']->flush();
}

function wp_cache_flush_runtime()
{
    return $GLOBALS['wp_object_cache']->flush_runtime();
}

function wp_cache_flush_group($group)
{
    return false;
}

function wp_cache_supports($feature)
{
    return in_array($feature, ['add_multiple', 'set_multiple', 'get_multiple', 'delete_multiple', 'flush_runtime'], true);
}

function wp_cache_close()
{
    return true;
}

function wp_cache_add_global_groups($groups)
{
    $GLOBALS['wp_object_cache']->add_global_groups((array) $groups);
}

function wp_cache_add_non_persistent_groups($groups)
{
    $GLOBALS['wp_object_cache']->add_non_persistent_groups((array) $groups);
}

function wp_cache_switch_to_blog($blog_id)
{
    $GLOBALS['wp_object_cache']->switch_to_blog((int) $blog_id);
}

function wp_cache_reset()
{
    _deprecated_function(__FUNCTION__, '3.5.0', 'wp_cache_switch_to_blog()');
}

abstract class Ephpm_Bench_Object_Cache
{
    public $cache_hits = 0;
    public $cache_misses = 0;
    /** group => true; read by switch_to_blog() when wp_cache_switch_to_blog is missing. */
    public $global_groups = [];

    /** Full key => value, for this request. */
    protected $runtime = [];
    private $non_persistent = [];
    private $salt;
    private $blog = '';

    public function __construct()
    {
        $this->salt = defined('WP_CACHE_KEY_SALT') ? (string) WP_CACHE_KEY_SALT : '';
        $this->blog = is_multisite() ? get_current_blog_id() . ':' : '';
    }

    private function id($key, $group)
    {
        $group = $group === '' ? 'default' : (string) $group;
        return $this->salt . (isset($this->global_groups[$group]) ? '' : $this->blog) . $group . ':' . $key;
    }

    private function persistent($group)
    {
        return !isset($this->non_persistent[$group === '' ? 'default' : (string) $group]);
    }

    private static function copy($value)
    {
        return is_object($value) ? clone $value : $value;
    }

    public function get($key, $group = '', $force = false, &$found = null)
    {
        $id = $this->id($key, $group);
        if (!$force && array_key_exists($id, $this->runtime)) {
            $found = true;
            $this->cache_hits++;
            return self::copy($this->runtime[$id]);
        }
        if ($this->persistent($group)) {
            $value = $this->fetch($id, $found);
            if ($found) {
                $this->runtime[$id] = $value;
                $this->cache_hits++;
                return self::copy($value);
            }
        }
        $found = false;
        $this->cache_misses++;
        return false;
    }

    public function get_multiple($keys, $group = '', $force = false)
    {
        $out = [];
        $fetch = [];
        foreach ($keys as $key) {
            $id = $this->id($key, $group);
            if (!$force && array_key_exists($id, $this->runtime)) {
                $this->cache_hits++;
                $out[$key] = self::copy($this->runtime[$id]);
            } else {
                $out[$key] = false;
                $fetch[$id] = $key;
            }
        }
        if ($fetch && $this->persistent($group)) {
            foreach ($this->fetch_many(array_keys($fetch)) as $id => $value) {
                $this->runtime[$id] = $value;
                $out[$fetch[$id]] = self::copy($value);
                $this->cache_hits++;
                unset($fetch[$id]);
            }
        }
        $this->cache_misses += count($fetch);
        return $out;
    }

    public function set($key, $data, $group = '', $expire = 0)
    {
        $id = $this->id($key, $group);
        $this->runtime[$id] = self::copy($data);
        if ($this->persistent($group)) {
            return $this->store($id, $data, max(0, $expire));
        }
        return true;
    }

    public function set_multiple(array $data, $group = '', $expire = 0)
    {
        $done = [];
        foreach ($data as $key => $value) {
            $done[$key] = $this->set($key, $value, $group, $expire);
        }
        return $done;
    }

    public function add($key, $data, $group = '', $expire = 0)
    {
        if (wp_suspend_cache_addition()) {
            return false;
        }
        $id = $this->id($key, $group);
        if (array_key_exists($id, $this->runtime)) {
            return false;
        }
        if ($this->persistent($group) && !$this->store_if_absent($id, $data, max(0, $expire))) {
            return false;
        }
        $this->runtime[$id] = self::copy($data);
        return true;
    }

    public function replace($key, $data, $group = '', $expire = 0)
    {
        $id = $this->id($key, $group);
        $exists = array_key_exists($id, $this->runtime) || ($this->persistent($group) && $this->exists($id));
        return $exists ? $this->set($key, $data, $group, $expire) : false;
    }

    public function delete($key, $group = '')
    {
        $id = $this->id($key, $group);
        $had = array_key_exists($id, $this->runtime);
        unset($this->runtime[$id]);
        if ($this->persistent($group)) {
            return $this->remove($id) || $had;
        }
        return $had;
    }

    public function incr($key, $offset, $group = '')
    {
        $value = $this->get($key, $group, false, $found);
        if (!$found) {
            return false;
        }
        $value = max(0, (is_numeric($value) ? (int) $value : 0) + $offset);
        $this->set($key, $value, $group);
        return $value;
    }

    public function flush()
    {
        $this->runtime = [];
        return $this->clear();
    }

    public function flush_runtime()
    {
        $this->runtime = [];
        return true;
    }

    public function add_global_groups(array $groups)
    {
        $this->global_groups += array_fill_keys($groups, true);
    }

    public function add_non_persistent_groups(array $groups)
    {
        $this->non_persistent += array_fill_keys($groups, true);
    }

    public function switch_to_blog($blog_id)
    {
        $this->blog = is_multisite() ? $blog_id . ':' : '';
    }

    public function stats()
    {
        echo '<p>', static::NAME, ' object cache: ', (int) $this->cache_hits, ' hits, ', (int) $this->cache_misses, ' misses</p>';
    }

    /** The stored value of $id; $found says whether there was one. */
    abstract protected function fetch($id, &$found);

    /** id => value of the ids that have one, in one call. */
    abstract protected function fetch_many(array $ids);

    /** Stores $data under $id ($expire seconds, 0: none). */
    abstract protected function store($id, $data, $expire);

    /** Stores $data under $id only if it has no value, in one step. */
    abstract protected function store_if_absent($id, $data, $expire);

    abstract protected function exists($id);

    /** Removes $id; true if it had a value. */
    abstract protected function remove($id);

    /** Removes every stored value (every site's). */
    abstract protected function clear();
}
