<?php
/**
 * WordPress's object-cache drop-in on ephpm: copy or symlink this one file
 * into wp-content/ (docs/wordpress.md). It needs the ephpm extension and
 * nothing else; without it, or while the store fails, WordPress keeps
 * running on the per-request cache alone.
 *
 * Contracts, beyond WordPress's own (wp-includes/cache.php):
 *
 * - Every store key starts with this site's prefix: WP_CACHE_KEY_SALT if
 *   defined, else EPHPM_WP_PREFIX, else one derived from ABSPATH, DB_HOST,
 *   DB_NAME and $table_prefix, so two sites on one store never share a key.
 * - A per-request runtime cache sits in front of the store; every write goes
 *   to the store first, then to the runtime cache. wp_cache_add() is
 *   ephpm_kv_setnx(): of any number of requests adding one key at once,
 *   exactly one gets true, whatever their runtime caches hold.
 * - wp_cache_flush() and wp_cache_flush_group() remove only this site's
 *   entries, by making them unreachable: every key carries the site's
 *   generation and its group's, kept in the store and read once per
 *   request; a flush advances one. The old entries stay in the store until
 *   their TTL ends or the store evicts them. So that they do end, every
 *   entry gets a TTL of at most EPHPM_WP_MAX_TTL seconds (default 86400;
 *   WordPress's "0: no expiry" becomes that ceiling; 0 turns the ceiling
 *   off). An entry that a request which read the old generation writes
 *   after another request flushed goes into the old generation: nobody
 *   reads it again.
 * - WordPress's merged option arrays ('alloptions' and 'notoptions' in
 *   group 'options', '<network id>:notoptions' in 'site-options') are not
 *   written whole: a set writes the difference between the new array and
 *   the one this request last read or wrote, merged into the stored array
 *   under a lock, with a version counter that lets a stale copy be refused
 *   (docs/wordpress.md, "The alloptions race"). EPHPM_WP_MERGE_OPTIONS =
 *   false writes them whole, as any other key (WordPress's own behaviour,
 *   which loses concurrent updates; for comparison only).
 * - A failure of the store (Ephpm\KvException, or no extension) never
 *   reaches WordPress: the request goes on with its runtime cache alone and
 *   logs one line (error_log). Then a miss is false with $found false, a
 *   set or delete returns false, and so does an add. A write the store
 *   refuses for want of memory returns false and removes the old entry, so
 *   that it is not served stale; the store stays in use.
 *
 * Not atomic, and said where they are: wp_cache_replace() (an exists, then
 * a set) and wp_cache_incr()/wp_cache_decr() on a key that is removed
 * between their check and their increment (the increment creates it).
 */

if (!defined('EPHPM_WP_OBJECT_CACHE')) {
    /** The version of this drop-in's key layout; a change of layout changes it. */
    define('EPHPM_WP_OBJECT_CACHE', 1);
}

/** Makes $wp_object_cache, the cache of this request. */
function wp_cache_init()
{
    $GLOBALS['wp_object_cache'] = new WP_Object_Cache();
}

/** Stores $data under $key only if the store has no entry for it: one atomic step across every process. */
function wp_cache_add($key, $data, $group = '', $expire = 0)
{
    global $wp_object_cache;
    return $wp_object_cache->add($key, $data, $group, $expire);
}

/** wp_cache_add() of each key => value; key => bool. */
function wp_cache_add_multiple(array $data, $group = '', $expire = 0)
{
    global $wp_object_cache;
    return $wp_object_cache->add_multiple($data, $group, $expire);
}

/** Stores $data only if $key has an entry (not atomic: an exists, then a set). */
function wp_cache_replace($key, $data, $group = '', $expire = 0)
{
    global $wp_object_cache;
    return $wp_object_cache->replace($key, $data, $group, $expire);
}

/** Stores $data under $key, replacing any entry. */
function wp_cache_set($key, $data, $group = '', $expire = 0)
{
    global $wp_object_cache;
    return $wp_object_cache->set($key, $data, $group, $expire);
}

/** wp_cache_set() of each key => value in one store crossing; key => bool. */
function wp_cache_set_multiple(array $data, $group = '', $expire = 0)
{
    global $wp_object_cache;
    return $wp_object_cache->set_multiple($data, $group, $expire);
}

/** The value of $key, or false with $found false on a miss; $force reads the store past the runtime cache. */
function wp_cache_get($key, $group = '', $force = false, &$found = null)
{
    global $wp_object_cache;
    return $wp_object_cache->get($key, $group, $force, $found);
}

/** wp_cache_get() of each key, the store's part in one crossing; key => value or false. */
function wp_cache_get_multiple($keys, $group = '', $force = false)
{
    global $wp_object_cache;
    return $wp_object_cache->get_multiple($keys, $group, $force);
}

/** Removes $key; true if the store had it. */
function wp_cache_delete($key, $group = '')
{
    global $wp_object_cache;
    return $wp_object_cache->delete($key, $group);
}

/** wp_cache_delete() of each key; key => bool. */
function wp_cache_delete_multiple(array $keys, $group = '')
{
    global $wp_object_cache;
    return $wp_object_cache->delete_multiple($keys, $group);
}

/** Adds $offset to a numeric entry, at least 0; false if there is no entry. */
function wp_cache_incr($key, $offset = 1, $group = '')
{
    global $wp_object_cache;
    return $wp_object_cache->incr($key, $offset, $group);
}

/** Subtracts $offset from a numeric entry, at least 0; false if there is no entry. */
function wp_cache_decr($key, $offset = 1, $group = '')
{
    global $wp_object_cache;
    return $wp_object_cache->decr($key, $offset, $group);
}

/** Makes every entry of this site unreachable (only this site's: see the file's docblock). */
function wp_cache_flush()
{
    global $wp_object_cache;
    return $wp_object_cache->flush();
}

/** Empties the runtime cache of this request; the store keeps its entries. */
function wp_cache_flush_runtime()
{
    global $wp_object_cache;
    return $wp_object_cache->flush_runtime();
}

/** Makes every entry of $group, on every blog of this site, unreachable. */
function wp_cache_flush_group($group)
{
    global $wp_object_cache;
    return $wp_object_cache->flush_group($group);
}

/** Whether this cache has $feature (the batch calls, flush_runtime and flush_group). */
function wp_cache_supports($feature)
{
    switch ($feature) {
        case 'add_multiple':
        case 'set_multiple':
        case 'get_multiple':
        case 'delete_multiple':
        case 'flush_runtime':
        case 'flush_group':
            return true;
        default:
            return false;
    }
}

/** Nothing to close: true. */
function wp_cache_close()
{
    return true;
}

/** Groups shared by every blog of a network (no blog id in their keys). */
function wp_cache_add_global_groups($groups)
{
    global $wp_object_cache;
    $wp_object_cache->add_global_groups($groups);
}

/** Groups kept in the runtime cache only: they never reach the store. */
function wp_cache_add_non_persistent_groups($groups)
{
    global $wp_object_cache;
    $wp_object_cache->add_non_persistent_groups($groups);
}

/** Makes the per-blog groups those of $blog_id. */
function wp_cache_switch_to_blog($blog_id)
{
    global $wp_object_cache;
    $wp_object_cache->switch_to_blog($blog_id);
}

/** Deprecated since WordPress 3.5: empties the runtime cache's per-blog groups. */
function wp_cache_reset()
{
    if (function_exists('_deprecated_function')) {
        _deprecated_function(__FUNCTION__, '3.5.0', 'wp_cache_switch_to_blog()');
    }
    global $wp_object_cache;
    $wp_object_cache->reset();
}

/** This request's figures: hits, misses, store crossings, whether the store serves, the prefix. */
function wp_cache_get_stats()
{
    global $wp_object_cache;
    return $wp_object_cache->get_stats();
}

/**
 * The object cache of one request: a runtime cache (the array $cache,
 * group => id => value) in front of ephpm's store. See the file's
 * docblock for the contracts.
 */
#[AllowDynamicProperties]
class WP_Object_Cache
{
    /** A store key longer than this has its tail hashed (the store takes 1..4096 bytes, lock names included). */
    private const MAX_KEY_BYTES = 4000;
    /** The longest TTL the store takes, in seconds. */
    private const MAX_STORE_TTL = 2147483647;
    /**
     * Generations and versions start at a random number at least this
     * large: a counter below it was made anew by an increment of a lost
     * key, and a counter made anew never repeats an old value.
     */
    private const COUNTER_FLOOR = 1 << 40;
    /** How long a merge may hold its lock, in seconds: a killed holder's lock lapses after this. */
    private const MERGE_LOCK_TTL = 5;
    /** The TTL ceiling when EPHPM_WP_MAX_TTL is not defined, in seconds. */
    public const DEFAULT_MAX_TTL = 86400;
    /** How long a merge or flush_group waits for its lock by default, in seconds. */
    public const DEFAULT_LOCK_WAIT = 2.0;

    /** @var array<string, array<int|string, mixed>> the runtime cache: group => id => value */
    public $cache = [];
    /** Gets that found a value (runtime or store). */
    public $cache_hits = 0;
    /** Gets that found none. */
    public $cache_misses = 0;
    /** @var array<string, true> groups without a blog id in their keys */
    public $global_groups = [];
    /** @var array<string, true> groups that never reach the store */
    public $non_persistent_groups = [];
    /** "<blog id>:" on a multisite network, else ''. */
    public $blog_prefix = '';
    /** Whether this is a multisite network (is_multisite() when the cache was made). */
    public $multisite = false;
    /** Calls into the store this request (each one crossing). */
    public $store_calls = 0;

    /** What every store key of this site starts with. */
    private string $prefix;
    /** The TTL ceiling in seconds; 0: none. */
    private int $maxTtl;
    /** Whether the merged option arrays are merged (else written whole). */
    private bool $mergeOptions;
    /** How long a merge or flush_group waits for its lock, in seconds. */
    private float $lockWait;
    /** False once the store failed this request, or without the extension. */
    private bool $storeUp;
    /** Whether this request logged its one line about the store. */
    private bool $warned = false;
    /** The site generation this request reads and writes in; null until read. */
    private ?int $siteGeneration = null;
    /** @var array<string, int> group => generation (absent: 0) */
    private array $groupGenerations = [];
    /**
     * What this request knows of each merged array's store entry, by store
     * key: 'base' the array it last read from or wrote to the store (null:
     * none, or the entry was missing), 'version' the version counter read
     * with it (null: the counter was absent; false: never read).
     *
     * @var array<string, array{base: ?array, version: string|null|false}>
     */
    private array $mergeState = [];

    /**
     * @param array{prefix?: string, max_ttl?: int, merge_options?: bool, lock_wait?: float} $options
     *        overrides of the constants (tests, and sites that make the cache themselves)
     */
    public function __construct(array $options = [])
    {
        $this->multisite = function_exists('is_multisite') ? (bool) is_multisite() : (defined('MULTISITE') && MULTISITE);
        $this->blog_prefix = $this->multisite ? (function_exists('get_current_blog_id') ? (int) get_current_blog_id() : 1) . ':' : '';
        $this->prefix = self::sitePrefix($options);
        $maxTtl = $options['max_ttl'] ?? (defined('EPHPM_WP_MAX_TTL') ? EPHPM_WP_MAX_TTL : self::DEFAULT_MAX_TTL);
        $this->maxTtl = max(0, min(self::MAX_STORE_TTL, (int) $maxTtl));
        $this->mergeOptions = (bool) ($options['merge_options'] ?? (defined('EPHPM_WP_MERGE_OPTIONS') ? EPHPM_WP_MERGE_OPTIONS : true));
        $this->lockWait = max(0.0, (float) ($options['lock_wait'] ?? (defined('EPHPM_WP_LOCK_WAIT') ? EPHPM_WP_LOCK_WAIT : self::DEFAULT_LOCK_WAIT)));
        $this->storeUp = function_exists('ephpm_kv_get_many');
        if (!$this->storeUp) {
            $this->warn('the ephpm extension is not loaded');
        }
    }

    /**
     * The prefix of every store key of this site: "wp<length>:<salt>", or
     * "wp#<sha256>" for a salt over 200 bytes (a length makes no prefix the
     * start of another).
     */
    private static function sitePrefix(array $options): string
    {
        if (isset($options['prefix'])) {
            $salt = (string) $options['prefix'];
        } elseif (defined('WP_CACHE_KEY_SALT') && (string) WP_CACHE_KEY_SALT !== '') {
            $salt = (string) WP_CACHE_KEY_SALT;
        } elseif (defined('EPHPM_WP_PREFIX') && (string) EPHPM_WP_PREFIX !== '') {
            $salt = (string) EPHPM_WP_PREFIX;
        } else {
            $site = [
                defined('ABSPATH') ? ABSPATH : __DIR__,
                defined('DB_HOST') ? DB_HOST : '',
                defined('DB_NAME') ? DB_NAME : '',
                isset($GLOBALS['table_prefix']) && is_string($GLOBALS['table_prefix']) ? $GLOBALS['table_prefix'] : '',
            ];
            $salt = 'site-' . substr(hash('sha256', implode("\0", $site)), 0, 24);
        }

        return strlen($salt) <= 200 ? 'wp' . strlen($salt) . ':' . $salt : 'wp#' . hash('sha256', $salt);
    }

    // ---------------------------------------------------------------- API

    /**
     * Stores $data only if the store has no live entry for $key, in one
     * atomic step (ephpm_kv_setnx): the runtime cache never decides, even
     * when a get put the key there. False while wp_suspend_cache_addition()
     * is on, when the key has an entry, and whenever the outcome is unknown
     * (the store failed). A non-persistent group is decided by the runtime
     * cache, as WordPress's own cache does.
     */
    public function add($key, $data, $group = 'default', $expire = 0)
    {
        if (function_exists('wp_suspend_cache_addition') && wp_suspend_cache_addition()) {
            return false;
        }
        if (!$this->isValidKey($key, __FUNCTION__)) {
            return false;
        }
        $group = self::group($group);
        $id = $this->runtimeId($key, $group);
        if (isset($this->non_persistent_groups[$group]) || !$this->generations()) {
            if ($this->inRuntime($group, $id)) {
                return false;
            }
            $this->cache[$group][$id] = is_object($data) ? clone $data : $data;

            return isset($this->non_persistent_groups[$group]);
        }
        $storeKey = $this->storeKey($key, $group);
        $kind = $this->mergeKind($key, $group);
        if ($kind !== null) {
            return $this->mergedAdd($storeKey, $group, $id, $data, $this->ttl($expire));
        }
        $packed = $this->packForStore($data, 'add');
        if ($packed === null) {
            return false;
        }
        try {
            $this->store_calls++;
            $added = ephpm_kv_setnx($storeKey, $packed, $this->ttl($expire));
        } catch (\Ephpm\KvException $e) {
            // Out of memory: nothing was stored. Else unknown: never an add.
            $this->storeFailed($e, 'add', $e->getCode() !== \Ephpm\KvException::OUT_OF_MEMORY);

            return false;
        } catch (\ValueError $e) {
            $this->warn('add: ' . $e->getMessage());

            return false;
        }
        if ($added) {
            $this->cache[$group][$id] = is_object($data) ? clone $data : $data;
        } else {
            // The store holds another value: the next get reads it.
            unset($this->cache[$group][$id]);
        }

        return $added;
    }

    /** add() of each key => value; key => bool (one crossing per key: the store has no batch setnx). */
    public function add_multiple(array $data, $group = '', $expire = 0)
    {
        $values = [];
        foreach ($data as $key => $value) {
            $values[$key] = $this->add($key, $value, $group, $expire);
        }

        return $values;
    }

    /**
     * Stores $data only if the store has an entry for $key. Not atomic: an
     * ephpm_kv_exists(), then a set, so an entry removed between the two
     * is stored again.
     */
    public function replace($key, $data, $group = 'default', $expire = 0)
    {
        if (!$this->isValidKey($key, __FUNCTION__)) {
            return false;
        }
        $group = self::group($group);
        $id = $this->runtimeId($key, $group);
        if (isset($this->non_persistent_groups[$group])) {
            return $this->inRuntime($group, $id) ? $this->set($key, $data, $group, $expire) : false;
        }
        if (!$this->generations()) {
            return false;
        }
        try {
            $this->store_calls++;
            $exists = ephpm_kv_exists($this->storeKey($key, $group));
        } catch (\Ephpm\KvException $e) {
            $this->storeFailed($e, 'replace');

            return false;
        }
        if (!$exists) {
            unset($this->cache[$group][$id]);

            return false;
        }

        return $this->set($key, $data, $group, $expire);
    }

    /**
     * Stores $data under $key (store first, then the runtime cache), with
     * $expire seconds (0: the TTL ceiling). False if the store did not take
     * it; the runtime cache takes it anyway, so the request sees what it
     * set. A merged option array is merged (mergedSet()).
     */
    public function set($key, $data, $group = 'default', $expire = 0)
    {
        if (!$this->isValidKey($key, __FUNCTION__)) {
            return false;
        }
        $group = self::group($group);
        $id = $this->runtimeId($key, $group);
        $stored = true;
        if (!isset($this->non_persistent_groups[$group])) {
            if (!$this->generations()) {
                $stored = false;
            } else {
                $storeKey = $this->storeKey($key, $group);
                $kind = $this->mergeKind($key, $group);
                if ($kind !== null) {
                    return $this->mergedSet($storeKey, $kind, $group, $id, $data, $this->ttl($expire));
                }
                $packed = $this->packForStore($data, 'set');
                if ($packed === null) {
                    // Not storable: the old entry would be stale.
                    $this->storeDelete($storeKey, 'set');
                    $stored = false;
                } else {
                    $stored = $this->storeWrite($storeKey, $packed, $this->ttl($expire), 'set');
                }
            }
        }
        $this->cache[$group][$id] = is_object($data) ? clone $data : $data;

        return $stored;
    }

    /**
     * set() of each key => value: the store's part in one crossing
     * (ephpm_kv_set_many); key => bool.
     */
    public function set_multiple(array $data, $group = '', $expire = 0)
    {
        $group = self::group($group);
        if (isset($this->non_persistent_groups[$group]) || !$this->generations()) {
            $values = [];
            foreach ($data as $key => $value) {
                $values[$key] = $this->set($key, $value, $group, $expire);
            }

            return $values;
        }
        $values = [];
        $batch = [];
        foreach ($data as $key => $value) {
            if (!$this->isValidKey($key, __FUNCTION__)) {
                $values[$key] = false;
            } elseif ($this->mergeKind($key, $group) !== null || ($packed = $this->packForStore($value, 'set_multiple')) === null) {
                $values[$key] = $this->set($key, $value, $group, $expire);
            } else {
                $batch[$this->storeKey($key, $group)] = $packed;
                $values[$key] = true;
            }
        }
        if ($batch !== []) {
            $ttl = $this->ttl($expire);
            $stored = true;
            try {
                $this->store_calls++;
                ephpm_kv_set_many($batch, $ttl);
            } catch (\Ephpm\KvException $e) {
                // Some entries may be stored and some not: those that are
                // not may hold an old value, so none is kept.
                $stored = false;
                if ($e->getCode() === \Ephpm\KvException::OUT_OF_MEMORY) {
                    $this->warn('set_multiple: ' . $e->getMessage());
                    foreach (array_keys($batch) as $storeKey) {
                        if (!$this->storeDelete($storeKey, 'set_multiple')) {
                            break;
                        }
                    }
                } else {
                    $this->storeFailed($e, 'set_multiple');
                }
            } catch (\ValueError $e) {
                // A value the store refuses (over 256 MiB): nothing was
                // written; each entry on its own, so the others are stored.
                $stored = null;
            }
            foreach ($data as $key => $value) {
                if ($values[$key] === true) {
                    if ($stored === null) {
                        $values[$key] = $this->set($key, $value, $group, $expire);
                        continue;
                    }
                    $this->cache[$group][$this->runtimeId($key, $group)] = is_object($value) ? clone $value : $value;
                    $values[$key] = $stored;
                }
            }
        }

        return $values;
    }

    /**
     * The value of $key and $found true; false and $found false if there is
     * none (a stored false is found). The runtime cache answers first unless
     * $force; a store read puts the value there. Objects come back as clones.
     */
    public function get($key, $group = 'default', $force = false, &$found = null)
    {
        if (!$this->isValidKey($key, __FUNCTION__)) {
            $found = false;

            return false;
        }
        $group = self::group($group);
        $id = $this->runtimeId($key, $group);
        $persistent = !isset($this->non_persistent_groups[$group]);
        if ((!$force || !$persistent || !$this->storeUp) && $this->inRuntime($group, $id)) {
            $found = true;
            $this->cache_hits++;
            $value = $this->cache[$group][$id];

            return is_object($value) ? clone $value : $value;
        }
        if (!$persistent || !$this->generations()) {
            $found = false;
            $this->cache_misses++;

            return false;
        }
        $storeKey = $this->storeKey($key, $group);
        try {
            $this->store_calls++;
            if ($this->mergeKind($key, $group) !== null) {
                // With its version counter, in the same crossing: the base
                // of this request's merges (mergedSet(), mergedAdd()).
                $versionKey = $this->storeKey($key, $group, 'v');
                $read = ephpm_kv_get_many([$storeKey, $versionKey]);
                $raw = $read[$storeKey] ?? null;
                $value = $raw === null ? null : self::unpack($raw);
                $this->mergeState[$storeKey] = ['base' => is_array($value) ? $value : null, 'version' => $read[$versionKey] ?? null];
            } else {
                $raw = ephpm_kv_get($storeKey);
                $value = $raw === null ? null : self::unpack($raw);
            }
        } catch (\Ephpm\KvException $e) {
            $this->storeFailed($e, 'get');

            return $this->get($key, $group, false, $found);
        }
        if ($raw === null) {
            unset($this->cache[$group][$id]);
            $found = false;
            $this->cache_misses++;

            return false;
        }
        $this->cache[$group][$id] = $value;
        $found = true;
        $this->cache_hits++;

        return is_object($value) ? clone $value : $value;
    }

    /**
     * get() of each of $keys, in their order, false for a miss; what the
     * runtime cache does not answer (or everything, with $force) is read
     * from the store in one crossing (ephpm_kv_get_many).
     */
    public function get_multiple($keys, $group = 'default', $force = false)
    {
        $group = self::group($group);
        $values = [];
        if (isset($this->non_persistent_groups[$group]) || !$this->generations()) {
            foreach ($keys as $key) {
                $values[$key] = $this->get($key, $group, $force);
            }

            return $values;
        }
        $pending = [];
        foreach ($keys as $key) {
            if (!$this->isValidKey($key, __FUNCTION__)) {
                $values[$key] = false;
                continue;
            }
            $id = $this->runtimeId($key, $group);
            if (!$force && $this->inRuntime($group, $id)) {
                $this->cache_hits++;
                $value = $this->cache[$group][$id];
                $values[$key] = is_object($value) ? clone $value : $value;
            } elseif ($this->mergeKind($key, $group) !== null) {
                $values[$key] = $this->get($key, $group, $force);
            } else {
                $pending[$this->storeKey($key, $group)] = [$key, $id];
                $values[$key] = false;
            }
        }
        if ($pending === []) {
            return $values;
        }
        try {
            $this->store_calls++;
            $read = ephpm_kv_get_many(array_keys($pending));
        } catch (\Ephpm\KvException $e) {
            $this->storeFailed($e, 'get_multiple');
            foreach ($pending as [$key]) {
                $values[$key] = $this->get($key, $group);
            }

            return $values;
        }
        foreach ($pending as $storeKey => [$key, $id]) {
            $raw = $read[$storeKey] ?? null;
            if ($raw === null) {
                unset($this->cache[$group][$id]);
                $this->cache_misses++;
                continue;
            }
            $value = self::unpack($raw);
            $this->cache[$group][$id] = $value;
            $this->cache_hits++;
            $values[$key] = is_object($value) ? clone $value : $value;
        }

        return $values;
    }

    /**
     * Removes $key from the store and the runtime cache; true if the store
     * had it (a non-persistent group: the runtime cache). False if the
     * store failed.
     */
    public function delete($key, $group = 'default', $deprecated = false)
    {
        if (!$this->isValidKey($key, __FUNCTION__)) {
            return false;
        }
        $group = self::group($group);
        $id = $this->runtimeId($key, $group);
        $inRuntime = $this->inRuntime($group, $id);
        unset($this->cache[$group][$id]);
        if (isset($this->non_persistent_groups[$group])) {
            return $inRuntime;
        }
        if (!$this->generations()) {
            return false;
        }
        $storeKey = $this->storeKey($key, $group);
        try {
            if ($this->mergeKind($key, $group) !== null) {
                unset($this->mergeState[$storeKey]);

                return $this->invalidate($storeKey, $this->storeKey($key, $group, 'v'));
            }
            $this->store_calls++;

            return ephpm_kv_del($storeKey) > 0;
        } catch (\Ephpm\KvException $e) {
            $this->storeFailed($e, 'delete');

            return false;
        }
    }

    /** delete() of each key; key => bool (one crossing per key). */
    public function delete_multiple(array $keys, $group = '')
    {
        $values = [];
        foreach ($keys as $key) {
            $values[$key] = $this->delete($key, $group);
        }

        return $values;
    }

    /** Adds $offset to $key's number; see addTo(). */
    public function incr($key, $offset = 1, $group = 'default')
    {
        return $this->addTo($key, (int) $offset, $group, __FUNCTION__);
    }

    /** Subtracts $offset from $key's number; see addTo(). */
    public function decr($key, $offset = 1, $group = 'default')
    {
        $offset = (int) $offset;

        return $this->addTo($key, $offset === PHP_INT_MIN ? PHP_INT_MAX : -$offset, $group, __FUNCTION__);
    }

    /**
     * Makes every entry of this site unreachable, in the store
     * (ephpm_kv_incr_by() of the site generation: concurrent flushes are
     * never lost) and in the runtime cache. Other sites' entries are
     * untouched. False if the store failed (the runtime cache is emptied).
     */
    public function flush()
    {
        $this->flush_runtime();
        if (!$this->generations()) {
            return false;
        }
        try {
            $this->store_calls++;
            $generation = ephpm_kv_incr_by($this->metaKey('gen'), 1);
            if ($generation < self::COUNTER_FLOOR) {
                // The counter was lost and made anew from 0: give it a
                // start no older generation can have had.
                $generation = random_int(self::COUNTER_FLOOR, PHP_INT_MAX >> 1);
                $this->store_calls++;
                ephpm_kv_set($this->metaKey('gen'), (string) $generation);
            }
            $this->siteGeneration = $generation;

            return true;
        } catch (\Ephpm\KvException $e) {
            $this->storeFailed($e, 'flush');

            return false;
        }
    }

    /**
     * Empties the runtime cache and forgets the generations and merge
     * bases read this request: the next access reads them again, so a long
     * process (WP-CLI, a queue worker) that calls it sees other processes'
     * flushes. The store keeps its entries.
     */
    public function flush_runtime()
    {
        $this->cache = [];
        $this->mergeState = [];
        $this->siteGeneration = null;
        $this->groupGenerations = [];

        return true;
    }

    /**
     * Makes every entry of $group, on every blog, unreachable: advances the
     * group's generation in the site's group entry, under the lock
     * "<prefix>|groups.lock", so concurrent flushes of groups are never
     * lost. If the lock cannot be had within the wait, the whole site is
     * flushed instead (a superset). False if the store failed.
     */
    public function flush_group($group)
    {
        $group = self::group($group);
        unset($this->cache[$group]);
        $this->mergeState = [];
        if (isset($this->non_persistent_groups[$group])) {
            return true;
        }
        if (!$this->generations()) {
            return false;
        }
        try {
            $this->store_calls++;
            $token = ephpm_kv_lock($this->metaKey('groups.lock'), self::MERGE_LOCK_TTL, $this->lockWait);
            if ($token === false) {
                return $this->flush();
            }
            try {
                $this->store_calls++;
                $generations = self::groupMap(ephpm_kv_get($this->metaKey('groups')));
                if ($generations === null) {
                    // The group entry is gone: generations() will start a
                    // new site generation for it; flushing the site now
                    // does the same.
                    return $this->flush();
                }
                $generations[$group] = ($generations[$group] ?? 0) + 1;
                $this->store_calls++;
                ephpm_kv_set($this->metaKey('groups'), serialize($generations));
                $this->groupGenerations = $generations;
            } finally {
                $this->store_calls++;
                ephpm_kv_unlock($this->metaKey('groups.lock'), $token);
            }

            return true;
        } catch (\Ephpm\KvException $e) {
            $this->storeFailed($e, 'flush_group');

            return false;
        }
    }

    /** Adds groups whose keys carry no blog id. */
    public function add_global_groups($groups)
    {
        $this->global_groups = array_merge($this->global_groups, array_fill_keys((array) $groups, true));
    }

    /** Adds groups that live in the runtime cache only. */
    public function add_non_persistent_groups($groups)
    {
        $this->non_persistent_groups = array_merge($this->non_persistent_groups, array_fill_keys((array) $groups, true));
    }

    /** Makes the per-blog groups those of $blog_id (on a multisite network). */
    public function switch_to_blog($blog_id)
    {
        $this->blog_prefix = $this->multisite ? (int) $blog_id . ':' : '';
    }

    /** Deprecated: empties the runtime cache's per-blog groups. */
    public function reset()
    {
        foreach (array_keys($this->cache) as $group) {
            if (!isset($this->global_groups[$group])) {
                unset($this->cache[$group]);
            }
        }
    }

    /** Prints the hits, misses and runtime groups, as WordPress's own cache does. */
    public function stats()
    {
        $kb = defined('KB_IN_BYTES') ? KB_IN_BYTES : 1024;
        echo '<p>';
        echo "<strong>Cache Hits:</strong> {$this->cache_hits}<br />";
        echo "<strong>Cache Misses:</strong> {$this->cache_misses}<br />";
        echo '</p>';
        echo '<ul>';
        foreach ($this->cache as $group => $cache) {
            $name = function_exists('esc_html') ? esc_html($group) : htmlspecialchars((string) $group, ENT_QUOTES);
            echo '<li><strong>Group:</strong> ' . $name . ' - ( ' . number_format(strlen(serialize($cache)) / $kb, 2) . 'k )</li>';
        }
        echo '</ul>';
    }

    /**
     * This request's figures.
     *
     * @return array{hits: int, misses: int, store_calls: int, store_up: bool, prefix: string, merge_options: bool, max_ttl: int}
     */
    public function get_stats()
    {
        return [
            'hits' => $this->cache_hits,
            'misses' => $this->cache_misses,
            'store_calls' => $this->store_calls,
            'store_up' => $this->storeUp,
            'prefix' => $this->prefix,
            'merge_options' => $this->mergeOptions,
            'max_ttl' => $this->maxTtl,
        ];
    }

    /**
     * The store key of $key in $group as this request reads it (with the
     * generations it read): for operators and tests. $kind 'd' is the
     * entry, 'v' a merged array's version counter, 'm' its merge lock.
     */
    public function store_key($key, $group = 'default', $kind = 'd')
    {
        $group = self::group($group);
        if (!$this->generations()) {
            return null;
        }

        return $this->storeKey($key, $group, $kind);
    }

    // ------------------------------------------------------- the store

    /**
     * Reads the site generation and the group generations, once per
     * request, in one crossing. They live in "<prefix>|gen" (a counter)
     * and "<prefix>|groups" (group => generation, serialized). A lost
     * counter starts anew at a random value; a lost group entry starts a
     * new site generation, since the group generations it held are not
     * known. False if the store is down.
     */
    private function generations(): bool
    {
        if (!$this->storeUp) {
            return false;
        }
        if ($this->siteGeneration !== null) {
            return true;
        }
        $genKey = $this->metaKey('gen');
        $groupsKey = $this->metaKey('groups');
        try {
            for ($attempt = 0; $attempt < 4; $attempt++) {
                $this->store_calls++;
                $read = ephpm_kv_get_many([$genKey, $groupsKey]);
                $generation = $read[$genKey] ?? null;
                $groups = self::groupMap($read[$groupsKey] ?? null);
                if ($generation === null) {
                    // The group entry first, so that no reader ever sees a
                    // counter without one (that would start a generation).
                    $this->store_calls += 2;
                    ephpm_kv_setnx($groupsKey, serialize([]));
                    ephpm_kv_setnx($genKey, (string) random_int(self::COUNTER_FLOOR, PHP_INT_MAX >> 1));
                    continue;
                }
                if ((string) (int) $generation !== $generation || (int) $generation < self::COUNTER_FLOOR) {
                    $this->store_calls++;
                    ephpm_kv_set($genKey, (string) random_int(self::COUNTER_FLOOR, PHP_INT_MAX >> 1));
                    continue;
                }
                if ($groups === null) {
                    $this->store_calls += 2;
                    ephpm_kv_incr_by($genKey, 1);
                    ephpm_kv_setnx($groupsKey, serialize([]));
                    continue;
                }
                $this->siteGeneration = (int) $generation;
                $this->groupGenerations = $groups;

                return true;
            }
            throw new \Ephpm\KvException('the generation entries kept changing', \Ephpm\KvException::UNAVAILABLE);
        } catch (\Ephpm\KvException $e) {
            $this->storeFailed($e, 'reading the generations');

            return false;
        }
    }

    /** The group => generation map a group entry holds; null if there is none or it is not one. */
    private static function groupMap(?string $raw): ?array
    {
        if ($raw === null) {
            return null;
        }
        $map = @unserialize($raw, ['allowed_classes' => false]);

        return is_array($map) ? $map : null;
    }

    /** "<prefix>|<name>": the site's own entries (generations, their lock). */
    private function metaKey(string $name): string
    {
        return $this->prefix . '|' . $name;
    }

    /**
     * "<prefix>|<kind><site gen>.<group gen>|<scope><group length>:<group>|<key>",
     * scope "b<blog id>:" for a per-blog group on a multisite network, else
     * "s"; a key that would be longer than MAX_KEY_BYTES gets "#<sha256>" of
     * that tail instead. Lengths and the scope letter make it unambiguous.
     */
    private function storeKey($key, string $group, string $kind = 'd'): string
    {
        $scope = $this->multisite && !isset($this->global_groups[$group]) ? 'b' . $this->blog_prefix : 's';
        $head = $this->prefix . '|' . $kind . $this->siteGeneration . '.' . ($this->groupGenerations[$group] ?? 0) . '|';
        $tail = $scope . strlen($group) . ':' . $group . '|' . $key;
        if (strlen($head) + strlen($tail) > self::MAX_KEY_BYTES) {
            $tail = '#' . hash('sha256', $tail);
        }

        return $head . $tail;
    }

    /**
     * ephpm_kv_set(); true if stored. A write the store refuses (out of
     * memory, a value over its limit) removes the old entry, which would be
     * stale, and leaves the store in use; any other failure turns it off for
     * the request.
     */
    private function storeWrite(string $storeKey, string $value, int $ttl, string $operation): bool
    {
        try {
            $this->store_calls++;
            ephpm_kv_set($storeKey, $value, $ttl);

            return true;
        } catch (\Ephpm\KvException $e) {
            if ($e->getCode() !== \Ephpm\KvException::OUT_OF_MEMORY) {
                $this->storeFailed($e, $operation);

                return false;
            }
            $this->warn($operation . ': ' . $e->getMessage());
        } catch (\ValueError $e) {
            $this->warn($operation . ': ' . $e->getMessage());
        }
        $this->storeDelete($storeKey, $operation);

        return false;
    }

    /** ephpm_kv_del(); false if the store failed (then it is off for the request). */
    private function storeDelete(string $storeKey, string $operation): bool
    {
        try {
            $this->store_calls++;
            ephpm_kv_del($storeKey);

            return true;
        } catch (\Ephpm\KvException $e) {
            $this->storeFailed($e, $operation);

            return false;
        }
    }

    /**
     * wp_cache_incr()/wp_cache_decr(): WordPress's semantics on the store.
     * False if there is no entry (the store's own increment would create
     * one). An integer entry is counted in the store, atomically
     * (ephpm_kv_incr_by()). A result below 0 is clamped to 0 as WordPress
     * does: the decrement takes back its own share of the deficit, at most
     * its offset, with a second increment, so concurrent decrements and
     * increments all count; between the two a reader can see the negative
     * number. Any other value counts as WordPress counts it (a number as
     * itself, anything else as 0), read and written back: not atomic. An
     * entry removed between the read and the increment is created with
     * the offset (and the TTL ceiling).
     */
    private function addTo($key, int $offset, $group, string $function)
    {
        if (!$this->isValidKey($key, $function)) {
            return false;
        }
        $group = self::group($group);
        $id = $this->runtimeId($key, $group);
        if (isset($this->non_persistent_groups[$group])) {
            if (!$this->inRuntime($group, $id)) {
                return false;
            }
            $value = $this->cache[$group][$id];
            $value = (is_numeric($value) ? $value : 0) + $offset;
            $this->cache[$group][$id] = $value < 0 ? 0 : $value;

            return $this->cache[$group][$id];
        }
        if (!$this->generations()) {
            return false;
        }
        $storeKey = $this->storeKey($key, $group);
        $offset = max(-PHP_INT_MAX, $offset);
        try {
            for ($attempt = 0; $attempt < 3; $attempt++) {
                $this->store_calls++;
                $raw = ephpm_kv_get($storeKey);
                if ($raw === null) {
                    unset($this->cache[$group][$id]);

                    return false;
                }
                if ((string) (int) $raw === $raw) {
                    try {
                        $this->store_calls++;
                        $sum = ephpm_kv_incr_by($storeKey, $offset, $this->ttl(0));
                    } catch (\Ephpm\KvException $e) {
                        if ($e->getCode() === \Ephpm\KvException::NOT_INTEGER) {
                            continue; // replaced in between: read again
                        }
                        if ($e->getCode() === \Ephpm\KvException::OVERFLOW) {
                            return false;
                        }
                        throw $e;
                    }
                    if ($sum < 0) {
                        if ($offset < 0) {
                            $this->store_calls++;
                            ephpm_kv_incr_by($storeKey, $sum >= $offset ? -$sum : -$offset);
                        }
                        $sum = 0;
                    }
                    $this->cache[$group][$id] = $sum;

                    return $sum;
                }
                $value = self::unpack($raw);
                $value = (is_numeric($value) ? $value : 0) + $offset;
                if ($value < 0) {
                    $value = 0;
                }
                if (!$this->storeWrite($storeKey, self::pack($value), $this->ttl(0), $function)) {
                    return false;
                }
                $this->cache[$group][$id] = $value;

                return $value;
            }

            return false;
        } catch (\Ephpm\KvException $e) {
            $this->storeFailed($e, $function);

            return false;
        }
    }

    // ------------------------------------------ the merged option arrays

    /**
     * 'all' for 'alloptions' (the whole array comes from the database: a
     * missing entry is rebuilt by its next reader), 'not' for the
     * 'notoptions' arrays (an element says an option does not exist: a
     * missing entry is an empty array), null for any other key or when
     * merging is off.
     */
    private function mergeKind($key, string $group): ?string
    {
        if (!$this->mergeOptions || !is_string($key)) {
            return null;
        }
        if ($group === 'options') {
            return $key === 'alloptions' ? 'all' : ($key === 'notoptions' ? 'not' : null);
        }
        if ($group === 'site-options' && str_ends_with($key, ':notoptions') && ctype_digit(substr($key, 0, -11))) {
            return 'not';
        }

        return null;
    }

    /**
     * wp_cache_set() of a merged array: writes the difference between
     * $data and the array this request last read or wrote (its base) into
     * the stored array, under the lock "m" of the key:
     *
     * 1. Read the stored array and its version counter (one crossing).
     * 2. 'all': if the entry is missing, write nothing (its next reader
     *    rebuilds it from the database, which has this update). If an
     *    element this request changes was changed by another since the
     *    base, the order of the two database writes is unknown:
     *    invalidate. Else apply the changes.
     *    'not': apply every removal (an option that now exists); apply
     *    additions (an option found missing) only if the version is the
     *    base's, since an option added since then may be among them.
     * 3. Advance the version (announce); expect exactly base + 1, else
     *    another writer ran unseen (an expired lock): invalidate.
     * 4. Write the array if it changed; read the version again and
     *    invalidate if it moved (an invalidation ran between 3 and 4).
     *
     * Without the lock within the wait, or with no base, it invalidates
     * instead. The runtime cache gets the merged array (or $data). True
     * unless the store failed.
     */
    private function mergedSet(string $storeKey, string $kind, string $group, $id, $data, int $ttl): bool
    {
        $versionKey = substr_replace($storeKey, 'v', strlen($this->prefix) + 1, 1);
        $lockName = substr_replace($storeKey, 'm', strlen($this->prefix) + 1, 1);
        $state = $this->mergeState[$storeKey] ?? ['base' => null, 'version' => false];
        $this->cache[$group][$id] = $data;
        try {
            if (!is_array($data) || ($kind === 'all' && $state['base'] === null)) {
                // No base to take a difference from: the next reader
                // rebuilds the entry from the database.
                $this->forgetBase($storeKey, $kind, $data);
                $this->invalidate($storeKey, $versionKey);

                return true;
            }
            $base = $state['base'] ?? [];
            $changed = [];
            foreach ($data as $element => $value) {
                if (!array_key_exists($element, $base) || $base[$element] !== $value) {
                    $changed[$element] = $value;
                }
            }
            $removed = array_diff_key($base, $data);
            if ($changed === [] && $removed === []) {
                return true;
            }
            $this->store_calls++;
            $token = ephpm_kv_lock($lockName, self::MERGE_LOCK_TTL, $this->lockWait);
            if ($token === false) {
                $this->forgetBase($storeKey, $kind, $data);
                $this->invalidate($storeKey, $versionKey);

                return true;
            }
            try {
                $this->store_calls++;
                $read = ephpm_kv_get_many([$storeKey, $versionKey]);
                $current = isset($read[$storeKey]) ? self::unpack($read[$storeKey]) : null;
                $version = $read[$versionKey] ?? null;
                $merged = null; // what to store; null: nothing
                $conflict = false;
                if ($current !== null && !is_array($current)) {
                    $conflict = true;
                } elseif ($kind === 'all') {
                    if ($current !== null) {
                        foreach ($changed + $removed as $element => $unused) {
                            $inBase = array_key_exists($element, $base);
                            if ($inBase !== array_key_exists($element, $current) || ($inBase && $base[$element] !== $current[$element])) {
                                $conflict = true;
                                break;
                            }
                        }
                        $merged = array_diff_key(array_replace($current, $changed), $removed);
                    }
                } else {
                    $current ??= [];
                    $merged = array_diff_key($current, $removed);
                    if ($state['version'] !== false && $state['version'] === $version) {
                        $merged = array_replace($merged, $changed);
                    }
                }
                $announced = $conflict ? null : $this->advanceVersion($versionKey, $version);
                if ($announced === null) {
                    $this->forgetBase($storeKey, $kind, $data);
                    $this->invalidate($storeKey, $versionKey);

                    return true;
                }
                if ($merged !== null && $merged !== $current) {
                    $this->store_calls += 2;
                    ephpm_kv_set($storeKey, self::pack($merged), $ttl);
                    if (ephpm_kv_get($versionKey) !== $announced) {
                        $this->forgetBase($storeKey, $kind, $data);
                        $this->invalidate($storeKey, $versionKey);

                        return true;
                    }
                }
                // A 'not' request keeps its own additions, stored or not:
                // it saw those options missing, and its later removal of
                // one must reach the store (and announce itself).
                $view = $kind === 'not' ? array_replace($merged, $changed) : $merged;
                $this->mergeState[$storeKey] = ['base' => $view, 'version' => $announced];
                $this->cache[$group][$id] = $view ?? $data;

                return true;
            } finally {
                $this->store_calls++;
                ephpm_kv_unlock($lockName, $token);
            }
        } catch (\Ephpm\KvException $e) {
            $this->forgetBase($storeKey, $kind, $data);
            $this->storeFailed($e, 'set');

            return false;
        } catch (\ValueError | \Exception $e) {
            // A merged array the store cannot hold (over its value limit,
            // or with a value serialize() refuses): not cached.
            $this->warn('set: ' . $e->getMessage());
            try {
                $this->invalidate($storeKey, $versionKey);
            } catch (\Ephpm\KvException $e) {
                $this->storeFailed($e, 'set');
            }

            return false;
        }
    }

    /**
     * After an invalidation, what the next set of this request takes its
     * difference from: for 'all' nothing (its next set invalidates again),
     * for 'not' the array it set, with an unknown version (its additions
     * are dropped, its removals still reach the store).
     */
    private function forgetBase(string $storeKey, string $kind, $data): void
    {
        if ($kind === 'not' && is_array($data)) {
            $this->mergeState[$storeKey] = ['base' => $data, 'version' => false];
        } else {
            unset($this->mergeState[$storeKey]);
        }
    }

    /**
     * wp_cache_add() of a merged array (wp_load_alloptions() after a miss,
     * with the array it read from the database): stores it only if this
     * request's last read of the key was a miss and, under the merge lock,
     * the entry is still missing and the version is still the one read
     * with that miss. Otherwise an update landed in between and the array
     * may lack it: nothing is stored, false. A version that moves between
     * the setnx and the check after it removes what was stored.
     */
    private function mergedAdd(string $storeKey, string $group, $id, $data, int $ttl): bool
    {
        $versionKey = substr_replace($storeKey, 'v', strlen($this->prefix) + 1, 1);
        $lockName = substr_replace($storeKey, 'm', strlen($this->prefix) + 1, 1);
        $state = $this->mergeState[$storeKey] ?? null;
        unset($this->cache[$group][$id]);
        if (!is_array($data) || $state === null || $state['base'] !== null || $state['version'] === false) {
            return false;
        }
        try {
            $this->store_calls++;
            $token = ephpm_kv_lock($lockName, self::MERGE_LOCK_TTL, $this->lockWait);
            if ($token === false) {
                return false;
            }
            try {
                $this->store_calls++;
                $read = ephpm_kv_get_many([$storeKey, $versionKey]);
                if (isset($read[$storeKey]) || ($read[$versionKey] ?? null) !== $state['version']) {
                    unset($this->mergeState[$storeKey]);

                    return false;
                }
                $this->store_calls += 2;
                if (!ephpm_kv_setnx($storeKey, self::pack($data), $ttl)) {
                    unset($this->mergeState[$storeKey]);

                    return false;
                }
                if (ephpm_kv_get($versionKey) !== $state['version']) {
                    unset($this->mergeState[$storeKey]);
                    $this->invalidate($storeKey, $versionKey);

                    return false;
                }
                $this->mergeState[$storeKey] = ['base' => $data, 'version' => $state['version']];
                $this->cache[$group][$id] = $data;

                return true;
            } finally {
                $this->store_calls++;
                ephpm_kv_unlock($lockName, $token);
            }
        } catch (\Ephpm\KvException $e) {
            unset($this->mergeState[$storeKey]);
            $this->storeFailed($e, 'add');

            return false;
        } catch (\ValueError | \Exception $e) {
            $this->warn('add: ' . $e->getMessage());

            return false;
        }
    }

    /**
     * Advances a merged array's version from $seen, the value read under
     * the lock (null: absent): a counter made anew starts at a random
     * value, with the TTL ceiling. Returns the new value, or null if it is
     * not exactly the next one (another writer advanced it unseen).
     */
    private function advanceVersion(string $versionKey, ?string $seen): ?string
    {
        $this->store_calls++;
        if ($seen === null) {
            $start = (string) random_int(self::COUNTER_FLOOR, PHP_INT_MAX >> 1);

            return ephpm_kv_setnx($versionKey, $start, $this->ttl(0)) ? $start : null;
        }
        try {
            $next = ephpm_kv_incr_by($versionKey, 1);
        } catch (\Ephpm\KvException $e) {
            if ($e->getCode() === \Ephpm\KvException::NOT_INTEGER || $e->getCode() === \Ephpm\KvException::OVERFLOW) {
                return null;
            }
            throw $e;
        }

        return (string) $next === (string) ((int) $seen + 1) ? (string) $next : null;
    }

    /**
     * Removes a merged array's entry so its next reader rebuilds it from the
     * database: delete, advance the version, delete again. Safe without the
     * lock: a merge that read before the advance sees the version move at
     * its own advance or at its check after writing, and one that wrote
     * after the first delete is removed by the second. True if the first
     * delete removed an entry.
     */
    private function invalidate(string $storeKey, string $versionKey): bool
    {
        $this->store_calls += 3;
        $removed = ephpm_kv_del($storeKey) > 0;
        if (!ephpm_kv_setnx($versionKey, (string) random_int(self::COUNTER_FLOOR, PHP_INT_MAX >> 1), $this->ttl(0))) {
            $this->store_calls++;
            try {
                ephpm_kv_incr_by($versionKey, 1);
            } catch (\Ephpm\KvException $e) {
                if ($e->getCode() !== \Ephpm\KvException::NOT_INTEGER && $e->getCode() !== \Ephpm\KvException::OVERFLOW) {
                    throw $e;
                }
                ephpm_kv_set($versionKey, (string) random_int(self::COUNTER_FLOOR, PHP_INT_MAX >> 1), $this->ttl(0));
            }
        }
        ephpm_kv_del($storeKey);

        return $removed;
    }

    // ----------------------------------------------------------- helpers

    /**
     * Turns the store off for the rest of the request (unless $off is
     * false) and logs one line per request.
     */
    private function storeFailed(\Throwable $e, string $operation, bool $off = true): void
    {
        if ($off) {
            $this->storeUp = false;
        }
        $this->warn($operation . ': ' . $e->getMessage() . ($off ? '; this request goes on with its runtime cache only' : ''));
    }

    /** Logs one line per request (error_log: never on the page). */
    private function warn(string $message): void
    {
        if (!$this->warned) {
            $this->warned = true;
            error_log('ephpm object cache: ' . $message);
        }
    }

    /** WordPress's key check: an integer or a non-empty string; else _doing_it_wrong() where WordPress has it. */
    private function isValidKey($key, string $function): bool
    {
        if (is_int($key) || (is_string($key) && trim($key) !== '')) {
            return true;
        }
        if (function_exists('_doing_it_wrong')) {
            $message = is_string($key)
                ? 'Cache key must not be an empty string.'
                : sprintf('Cache key must be integer or non-empty string, %s given.', gettype($key));
            _doing_it_wrong(sprintf('%s::%s', __CLASS__, $function), function_exists('__') ? __($message) : $message, '6.1.0');
        }

        return false;
    }

    /** WordPress's group: an empty one (as empty() says) is 'default'. */
    private static function group($group): string
    {
        return empty($group) ? 'default' : (string) $group;
    }

    /** The runtime cache's id of $key: with the blog prefix in a per-blog group, as WordPress's own cache. */
    private function runtimeId($key, string $group)
    {
        return $this->multisite && !isset($this->global_groups[$group]) ? $this->blog_prefix . $key : $key;
    }

    private function inRuntime(string $group, $id): bool
    {
        return isset($this->cache[$group]) && (isset($this->cache[$group][$id]) || array_key_exists($id, $this->cache[$group]));
    }

    /**
     * A TTL for the store from WordPress's $expire: a number of seconds
     * (anything else, negative or 0: none), capped by the ceiling, which
     * also replaces "none".
     */
    private function ttl($expire): int
    {
        $seconds = is_numeric($expire) ? $expire + 0 : 0;
        if ($seconds >= self::MAX_STORE_TTL) {
            $seconds = self::MAX_STORE_TTL;
        } elseif ($seconds > 0) {
            $seconds = max(1, (int) $seconds);
        } else {
            $seconds = 0;
        }
        if ($this->maxTtl > 0 && ($seconds === 0 || $seconds > $this->maxTtl)) {
            $seconds = $this->maxTtl;
        }

        return $seconds;
    }

    /**
     * pack(), or null (and the request's one line) for a value that
     * serialize() refuses (a closure, an anonymous class): such a value
     * lives in the runtime cache only, as in WordPress's own cache.
     */
    private function packForStore($value, string $operation): ?string
    {
        try {
            return self::pack($value);
        } catch (\Exception $e) {
            $this->warn($operation . ': ' . $e->getMessage());

            return null;
        }
    }

    /**
     * An integer as its digits (the store's counters count on them), any
     * other value serialized: floats too, so they come back identical.
     */
    private static function pack($value): string
    {
        return is_int($value) ? (string) $value : serialize($value);
    }

    /** What pack() wrote; false for a stored false; a string that is neither, as it is. */
    private static function unpack(string $raw)
    {
        if ((string) (int) $raw === $raw) {
            return (int) $raw;
        }
        $value = @unserialize($raw);

        return $value === false && $raw !== 'b:0;' ? $raw : $value;
    }
}
