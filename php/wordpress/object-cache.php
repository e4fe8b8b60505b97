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
 *   to the store first, then to the runtime cache. A miss is remembered
 *   for the request ($force reads the store). wp_cache_add() is
 *   ephpm_kv_setnx(): of any number of requests adding one key at once,
 *   exactly one gets true, whatever their runtime caches hold.
 * - wp_cache_flush() and wp_cache_flush_group() remove only this site's
 *   entries, by making them unreachable: every key carries the site's
 *   generation and its group's, kept in the store; a flush advances one. A
 *   request reads them at its first access (with this blog's alloptions
 *   and notoptions, in one crossing), again when its reading is older than
 *   EPHPM_WP_GENERATION_MAX_AGE (1 s), and at every read and merge of a
 *   merged array, whose keys carry none (its value does). The old entries
 *   stay in the store until their TTL ends or the store evicts them. So
 *   that they do end, every entry gets a TTL of at most EPHPM_WP_MAX_TTL
 *   seconds (default 86400; WordPress's "0: no expiry" becomes that
 *   ceiling; 0 turns the ceiling off).
 * - WordPress's merged option arrays ('alloptions' and 'notoptions' in
 *   group 'options', '<network id>:notoptions' in 'site-options') are not
 *   written whole: a set writes the difference between the new array and
 *   the one this request last read or wrote, merged into the stored array
 *   under a lock written with its fence, with a version counter that lets
 *   a stale copy be refused (docs/wordpress.md, "The alloptions race",
 *   argues it step by step). EPHPM_WP_MERGE_OPTIONS =
 *   false writes them whole, as any other key (WordPress's own behaviour,
 *   which loses concurrent updates; for comparison only).
 * - A failure of the store (Ephpm\KvException, or no extension) never
 *   reaches WordPress: the request goes on with its runtime cache alone and
 *   logs one line (error_log). Then a miss is false with $found false, a
 *   set or delete returns false, and so does an add. The store is tried
 *   again after wp_cache_flush_runtime() or EPHPM_WP_STORE_RETRY seconds
 *   (10); if writes were skipped meanwhile, its return flushes the site. A
 *   write the store refuses for want of memory returns false and removes
 *   the old entry, so that it is not served stale; the store stays in use.
 *   An entry unserialize() throws on is a miss, and is removed.
 *
 * Not atomic, and said where they are: wp_cache_replace() (an exists, then
 * a set) and wp_cache_incr()/wp_cache_decr() on a key that is removed
 * between their check and their increment (the increment creates it).
 */

if (!defined('EPHPM_WP_OBJECT_CACHE')) {
    /** The version of this drop-in's key layout; a change of layout changes it. */
    define('EPHPM_WP_OBJECT_CACHE', 2);
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
    /**
     * And below this: every counter stays under 2^53, where a double holds
     * each integer exactly (a Redis script's Lua number is a double: the
     * sum that ephpm_kv_incr_by() with a TTL returns from Redis is rounded
     * above it, and a version check would then see a move that was none).
     */
    private const COUNTER_CEILING = 1 << 52;
    /** How long a merge may hold its lock, in seconds: a killed holder's lock lapses after this. */
    private const MERGE_LOCK_TTL = 5;
    /** What unpack() returns for an entry unserialize() throws on (no stored value is this string: pack() serializes strings). */
    private const UNREADABLE = "\0ephpm-unreadable";
    /** The TTL ceiling when EPHPM_WP_MAX_TTL is not defined, in seconds. */
    public const DEFAULT_MAX_TTL = 86400;
    /** How long a merge or flush_group waits for its lock by default, in seconds. */
    public const DEFAULT_LOCK_WAIT = 2.0;
    /** How long the store stays off after a failure before it is tried again, by default, in seconds. */
    public const DEFAULT_STORE_RETRY = 10.0;
    /** How old this request's reading of the generations may be when it reaches the store, by default, in seconds. */
    public const DEFAULT_GENERATION_MAX_AGE = 1.0;

    /** @var array<string, array<int|string, mixed>> the runtime cache: group => id => value */
    public $cache = [];
    /**
     * @var array<string, array<int|string, true>> keys the store had no entry for when this request
     *      last read them: later gets of the request answer false without a crossing ($force reads)
     */
    private array $missing = [];
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
    /** Calls into the store this request (each one crossing): every one goes through kv(), which counts it. */
    public $store_calls = 0;

    /** What every store key of this site starts with. */
    private string $prefix;
    /** The prefix of the store's functions: 'ephpm_kv_' (tests put wrappers of them under another). */
    private string $kvFunctions;
    /** The TTL ceiling in seconds; 0: none. */
    private int $maxTtl;
    /** Whether the merged option arrays are merged (else written whole). */
    private bool $mergeOptions;
    /** How long a merge or flush_group waits for its lock, in seconds. */
    private float $lockWait;
    /** False once the store failed this request, or without the extension. */
    private bool $storeUp;
    /** When a failure turned the store off (hrtime, ns); null: it did not, or the extension is missing. */
    private ?int $storeDownAt = null;
    /** How long the store stays off after a failure before it is tried again (ns). */
    private int $storeRetry;
    /** Whether a write or delete was skipped (or its outcome unknown) while the store was off: its return advances the site generation. */
    private bool $skippedWrites = false;
    /** Whether this request logged its one line about the store. */
    private bool $warned = false;
    /** What the last unserialize() that threw said (for the log line). */
    private static string $unpackError = '';
    /** The site generation this request reads and writes in; null until read. */
    private ?int $siteGeneration = null;
    /** When the generations were last read (hrtime, ns). */
    private int $generationsReadAt = 0;
    /** How old that reading may be when the request reaches the store (ns): older, it is read again first. */
    private int $generationMaxAge;
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
     * @param array{prefix?: string, max_ttl?: int, merge_options?: bool, lock_wait?: float, generation_max_age?: float, store_retry?: float, kv_functions?: string} $options
     *        overrides of the constants (tests, and sites that make the cache themselves); kv_functions
     *        names another prefix for the store's functions than 'ephpm_kv_' (a test's wrappers)
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
        $maxAge = (float) ($options['generation_max_age'] ?? (defined('EPHPM_WP_GENERATION_MAX_AGE') ? EPHPM_WP_GENERATION_MAX_AGE : self::DEFAULT_GENERATION_MAX_AGE));
        $this->generationMaxAge = (int) (max(0.0, min(3600.0, $maxAge)) * 1e9);
        $retry = (float) ($options['store_retry'] ?? (defined('EPHPM_WP_STORE_RETRY') ? EPHPM_WP_STORE_RETRY : self::DEFAULT_STORE_RETRY));
        $this->storeRetry = (int) (max(0.0, min(86400.0, $retry)) * 1e9);
        $this->kvFunctions = (string) ($options['kv_functions'] ?? 'ephpm_kv_');
        $this->storeUp = function_exists($this->kvFunctions . 'get_many');
        if (!$this->storeUp) {
            $this->warn('the ephpm extension is not loaded');
        }
    }

    /**
     * The prefix of every store key of this site: "wp<length>:<salt>", or
     * "wp#<sha256>" for a salt over 200 bytes or with a brace (a length
     * makes no prefix the start of another).
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

        // No brace in a prefix: the first "{" of a key is the drop-in's
        // own, which names the key's hash tag on a Redis Cluster.
        return strlen($salt) <= 200 && strpbrk($salt, '{}') === false ? 'wp' . strlen($salt) . ':' . $salt : 'wp#' . hash('sha256', $salt);
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
        unset($this->missing[$group][$id]);
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
            $added = $this->kv('setnx', $storeKey, $packed, $this->ttl($expire));
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
        unset($this->missing[$group][$id]);
        if (isset($this->non_persistent_groups[$group])) {
            return $this->inRuntime($group, $id) ? $this->set($key, $data, $group, $expire) : false;
        }
        if (!$this->generations(true)) {
            return false;
        }
        try {
            $exists = $this->kv('exists', $this->storeKey($key, $group));
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
        unset($this->missing[$group][$id]);
        $stored = true;
        if (!isset($this->non_persistent_groups[$group])) {
            if (!$this->generations(true)) {
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
        if (isset($this->non_persistent_groups[$group]) || !$this->generations(!isset($this->non_persistent_groups[$group]))) {
            $values = [];
            foreach ($data as $key => $value) {
                $values[$key] = $this->set($key, $value, $group, $expire);
            }

            return $values;
        }
        $values = [];
        $batch = [];
        $batched = []; // key => value of what went into $batch (a merged array is set() on its own, once)
        foreach ($data as $key => $value) {
            if (!$this->isValidKey($key, __FUNCTION__)) {
                $values[$key] = false;
            } elseif ($this->mergeKind($key, $group) !== null || ($packed = $this->packForStore($value, 'set_multiple')) === null) {
                $values[$key] = $this->set($key, $value, $group, $expire);
            } else {
                $batch[$this->storeKey($key, $group)] = $packed;
                $batched[$key] = $value;
                $values[$key] = true; // its place in the order; decided below
            }
        }
        if ($batch !== []) {
            $ttl = $this->ttl($expire);
            $stored = true;
            try {
                $this->kv('set_many', $batch, $ttl);
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
            foreach ($batched as $key => $value) {
                if ($stored === null) {
                    $values[$key] = $this->set($key, $value, $group, $expire);
                    continue;
                }
                $id = $this->runtimeId($key, $group);
                $this->cache[$group][$id] = is_object($value) ? clone $value : $value;
                unset($this->missing[$group][$id]);
                $values[$key] = $stored;
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
        $merged = $persistent && $this->storeServes() && $this->mergeKind($key, $group) !== null;
        if (!$persistent || (!$force && isset($this->missing[$group][$id])) || (!$merged && !$this->generations()) || !$this->storeUp) {
            $found = false;
            $this->cache_misses++;

            return false;
        }
        $storeKey = $this->storeKey($key, $group);
        try {
            if ($merged) {
                // The generations, the version counter and the entry, in
                // one crossing: the base of this request's merges
                // (mergedSet(), mergedAdd()).
                [$versionKey] = $this->mergeKeys($storeKey);
                $read = $this->readGenerations([$versionKey, $storeKey]);
                $raw = $read[$storeKey] ?? null;
                $value = $this->mergedValue($raw, $group);
                $this->mergeState[$storeKey] = ['base' => is_array($value) ? $value : null, 'version' => $read[$versionKey] ?? null, 'present' => $raw !== null];
                if (!is_array($value)) {
                    $raw = null;
                }
            } else {
                $raw = $this->kv('get', $storeKey);
                $value = $raw === null ? null : $this->unpackStored($storeKey, $raw, 'get');
                if ($value === self::UNREADABLE) {
                    $raw = null;
                }
            }
        } catch (\Ephpm\KvException $e) {
            $this->storeFailed($e, 'get');

            return $this->get($key, $group, false, $found);
        }
        if ($raw === null) {
            unset($this->cache[$group][$id]);
            $this->missing[$group][$id] = true;
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
            } elseif (!$force && isset($this->missing[$group][$id])) {
                $this->cache_misses++;
                $values[$key] = false;
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
            $read = $this->kv('get_many', array_keys($pending));
        } catch (\Ephpm\KvException $e) {
            $this->storeFailed($e, 'get_multiple');
            foreach ($pending as [$key]) {
                $values[$key] = $this->get($key, $group);
            }

            return $values;
        }
        foreach ($pending as $storeKey => [$key, $id]) {
            $raw = $read[$storeKey] ?? null;
            $value = $raw === null ? self::UNREADABLE : $this->unpackStored($storeKey, $raw, 'get_multiple');
            if ($value === self::UNREADABLE) {
                unset($this->cache[$group][$id]);
                $this->missing[$group][$id] = true;
                $this->cache_misses++;
                continue;
            }
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
        unset($this->cache[$group][$id], $this->missing[$group][$id]);
        if (isset($this->non_persistent_groups[$group])) {
            return $inRuntime;
        }
        if (!$this->generations(true)) {
            return false;
        }
        $storeKey = $this->storeKey($key, $group);
        try {
            if ($this->mergeKind($key, $group) !== null) {
                unset($this->mergeState[$storeKey]);

                [$versionKey, $lockName] = $this->mergeKeys($storeKey);

                return $this->invalidate($storeKey, $versionKey, $lockName);
            }

            return $this->kv('del', $storeKey) > 0;
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
        if (!$this->generations(true)) {
            return false;
        }
        try {
            $generation = $this->kv('incr_by', $this->metaKey('gen'), 1);
            if ($generation < self::COUNTER_FLOOR) {
                // The counter was lost and made anew from 0: give it a
                // start no older generation can have had.
                $generation = self::counterStart();
                $this->kv('set', $this->metaKey('gen'), (string) $generation);
            }
            $this->siteGeneration = $generation;
            $this->generationsReadAt = hrtime(true);

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
     * flushes. A store that a failure turned off is tried again at the next
     * access. The store keeps its entries.
     */
    public function flush_runtime()
    {
        $this->cache = [];
        $this->missing = [];
        $this->mergeState = [];
        $this->siteGeneration = null;
        if (!$this->storeUp && $this->storeDownAt !== null) {
            $this->storeDownAt = hrtime(true) - $this->storeRetry; // tried again at the next access (storeServes())
        }
        $this->groupGenerations = [];

        return true;
    }

    /**
     * Makes every entry of $group, on every blog, unreachable: advances the
     * group's generation in the site's group entry, under its lock
     * (lockMerge(): a holder past the wait is taken over), written fenced,
     * so concurrent flushes of groups are never lost and a holder whose
     * lock lapsed never writes back an older map. If the lock cannot be
     * had, or the fenced write is refused, the whole site is flushed
     * instead (a superset). False if the store failed.
     */
    public function flush_group($group)
    {
        $group = self::group($group);
        unset($this->cache[$group], $this->missing[$group]);
        $needle = strlen($group) . ':' . $group . '|';
        foreach (array_keys($this->mergeState) as $storeKey) {
            // "<prefix>|d{<scope><group length>:<group>|<key>}": that group's merged arrays only.
            $tail = substr($storeKey, strpos($storeKey, '{') + 1);
            $tail = $tail[0] === 'b' ? substr($tail, strpos($tail, ':') + 1) : substr($tail, 1);
            if (strncmp($tail, $needle, strlen($needle)) === 0) {
                unset($this->mergeState[$storeKey]);
            }
        }
        if (isset($this->non_persistent_groups[$group])) {
            return true;
        }
        if (!$this->generations(true)) {
            return false;
        }
        try {
            $lockName = $this->metaKey('groups.lock');
            $token = $this->lockMerge($lockName, $fence);
            if ($token === false) {
                return $this->flush();
            }
            try {
                $generations = self::groupMap($this->kv('get', $this->metaKey('groups')));
                if ($generations === null) {
                    // The group entry is gone: generations() will start a
                    // new site generation for it; flushing the site now
                    // does the same.
                    return $this->flush();
                }
                $generations[$group] = ($generations[$group] ?? 0) + 1;
                if (!$this->kv('set_fenced', $this->metaKey('groups'), serialize($generations), $lockName, $fence)) {
                    // Our grant lapsed and another request took the lock:
                    // what we read may be older than its write, and ours
                    // could send a group back to an earlier generation.
                    return $this->flush();
                }
                $this->groupGenerations = $generations;
                $this->generationsReadAt = hrtime(true);
            } finally {
                $this->kv('unlock', $lockName, $token);
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
        foreach (array_keys($this->cache + $this->missing) as $group) {
            if (!isset($this->global_groups[$group])) {
                unset($this->cache[$group], $this->missing[$group]);
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
     * Whether the store serves, with generations read at most the maximum
     * age ago (EPHPM_WP_GENERATION_MAX_AGE, 1 s by default): a request
     * that runs longer, or that a flush overtook, reads them again before
     * it reaches the store, so its writes and deletes land in the
     * generation others read. False if the store is down.
     */
    private function generations(bool $write = false): bool
    {
        if (!$this->storeServes()) {
            if ($write) {
                $this->skippedWrites = true;
            }

            return false;
        }
        if ($this->siteGeneration !== null && hrtime(true) - $this->generationsReadAt <= $this->generationMaxAge) {
            return true;
        }
        try {
            $this->readGenerations();
            if ($this->skippedWrites) {
                // Back after a failure during which this process skipped
                // writes or deletes: entries they would have changed may
                // be stale, and which ones is not known. Advancing the site
                // generation (a flush) makes every one unreachable.
                $generation = $this->kv('incr_by', $this->metaKey('gen'), 1);
                $this->siteGeneration = $generation >= self::COUNTER_FLOOR ? $generation : null;
                $this->skippedWrites = false;
                $this->warn('the store serves again; writes were skipped while it failed, so this site\'s entries were flushed');
                if ($this->siteGeneration === null) {
                    $this->readGenerations();
                }
            }

            return true;
        } catch (\Ephpm\KvException $e) {
            $this->storeFailed($e, 'reading the generations');

            return false;
        }
    }

    /**
     * Whether the store is in use: after a failure turned it off, it is
     * tried again once EPHPM_WP_STORE_RETRY seconds (10 by default) have
     * passed, or after wp_cache_flush_runtime(), so that a long process
     * (WP-CLI, a queue worker) does not lose it for good to one failure.
     */
    private function storeServes(): bool
    {
        if (!$this->storeUp && $this->storeDownAt !== null && hrtime(true) - $this->storeDownAt >= $this->storeRetry) {
            $this->storeUp = true;
            $this->storeDownAt = null;
            $this->siteGeneration = null;
            $this->warned = false; // one line per failure
        }

        return $this->storeUp;
    }

    /**
     * Reads the site generation and the group generations, with $extra
     * keys in the same crossing (ephpm_kv_get_many: the merged arrays read
     * them so), and makes them this request's. They live in "<prefix>|gen"
     * (a counter) and the groups' entry (group => generation, serialized).
     * A lost counter starts anew at a random value; a lost group entry
     * starts a new site generation, since the group generations it held
     * are not known. Returns what the crossing read; throws
     * Ephpm\KvException.
     */
    private function readGenerations(array $extra = []): array
    {
        $genKey = $this->metaKey('gen');
        $groupsKey = $this->metaKey('groups');
        // The request's first reading also fetches this blog's alloptions
        // and notoptions, with their versions: WordPress reads both on
        // every page, and so they cost no crossing of their own.
        $prefetch = $this->siteGeneration === null && $this->mergeOptions ? $this->prefetchKeys() : [];
        $keys = array_values(array_unique(array_merge([$genKey, $groupsKey], $extra, ...array_values($prefetch))));
        for ($attempt = 0; $attempt < 4; $attempt++) {
            $read = $this->kv('get_many', $keys);
            $generation = $read[$genKey] ?? null;
            $groups = self::groupMap($read[$groupsKey] ?? null);
            if ($generation === null) {
                // The group entry first, so that no reader ever sees a
                // counter without one (that would start a generation).
                $this->kv('setnx', $groupsKey, serialize([]));
                $this->kv('setnx', $genKey, (string) self::counterStart());
                continue;
            }
            if ((string) (int) $generation !== $generation || (int) $generation < self::COUNTER_FLOOR) {
                $this->kv('set', $genKey, (string) self::counterStart());
                continue;
            }
            if ($groups === null) {
                $this->kv('incr_by', $genKey, 1);
                $this->kv('setnx', $groupsKey, serialize([]));
                continue;
            }
            $this->siteGeneration = (int) $generation;
            $this->groupGenerations = $groups;
            $this->generationsReadAt = hrtime(true);
            foreach ($prefetch as $key => [$versionKey, $storeKey]) {
                $this->absorbMerged($key, 'options', $storeKey, $read[$versionKey] ?? null, $read[$storeKey] ?? null);
            }

            return $read;
        }
        throw new \Ephpm\KvException('the generation entries kept changing', \Ephpm\KvException::UNAVAILABLE);
    }

    /** @return array<string, array{string, string}> key => [version key, store key] of this blog's alloptions and notoptions */
    private function prefetchKeys(): array
    {
        $keys = [];
        foreach (['alloptions', 'notoptions'] as $key) {
            $storeKey = $this->storeKey($key, 'options');
            $keys[$key] = [$this->mergeKeys($storeKey)[0], $storeKey];
        }

        return $keys;
    }

    /**
     * What the first reading found for a merged array: its merge base and
     * version, and the runtime cache's value (or a remembered miss), as a
     * get() would have made them. Not where the runtime cache already has
     * one (a set before the store was reached).
     */
    private function absorbMerged(string $key, string $group, string $storeKey, ?string $version, ?string $raw): void
    {
        $id = $this->runtimeId($key, $group);
        if ($this->inRuntime($group, $id) || isset($this->mergeState[$storeKey])) {
            return;
        }
        $value = $this->mergedValue($raw, $group);
        $this->mergeState[$storeKey] = ['base' => is_array($value) ? $value : null, 'version' => $version, 'present' => $raw !== null];
        if (is_array($value)) {
            $this->cache[$group][$id] = $value;
        } else {
            $this->missing[$group][$id] = true;
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

    /**
     * The site's own entries: "<prefix>|gen", and the groups' entry with
     * its lock, "<prefix>|{<prefix>|groups}" and "...}.lock", which share a
     * hash tag (a fenced write needs its key in its lock's Cluster slot).
     */
    private function metaKey(string $name): string
    {
        if ($name === 'gen') {
            return $this->prefix . '|gen';
        }

        return $this->prefix . '|{' . $this->prefix . '|groups}' . ($name === 'groups.lock' ? '.lock' : '');
    }

    /**
     * "<prefix>|<kind>{<site gen>.<group gen>|<scope><group length>:<group>|<key>}",
     * scope "b<blog id>:" for a per-blog group on a multisite network, else
     * "s"; a key that would be longer than MAX_KEY_BYTES gets "#<sha256>" of
     * that tail instead. Lengths and the scope letter make it unambiguous.
     * The braces are the key's hash tag on a Redis Cluster: the prefix has
     * none, so an entry ('d'), its version counter ('v') and its merge lock
     * ('m') differ only before the tag and share one slot, whatever the
     * key holds.
     *
     * A merged option array's keys carry no generations:
     * "<prefix>|<kind>{<scope>...|<key>}". Its value carries them instead
     * (mergedValue()), so that its version counter and lock stay the same
     * across flushes, and a request that began before a flush still
     * announces to those that began after it.
     */
    private function storeKey($key, string $group, string $kind = 'd'): string
    {
        $scope = $this->multisite && !isset($this->global_groups[$group]) ? 'b' . $this->blog_prefix : 's';
        $head = $this->prefix . '|' . $kind . '{' . ($this->mergeKind($key, $group) !== null ? '' : $this->siteGeneration . '.' . ($this->groupGenerations[$group] ?? 0) . '|');
        $tail = $scope . strlen($group) . ':' . $group . '|' . $key;
        if (strlen($head) + strlen($tail) + 1 > self::MAX_KEY_BYTES) {
            $tail = '#' . hash('sha256', $tail);
        }

        return $head . $tail . '}';
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
            $this->kv('set', $storeKey, $value, $ttl);

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
            $this->kv('del', $storeKey);

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
     * increments all count. Between the two the entry holds a negative
     * number, which every reader takes for 0 (unpack()) and every other
     * increment counts on, atomically as well: pack() never stores a
     * negative integer as digits, so digits below 0 are always such a
     * deficit on its way back. Any other value counts as WordPress counts
     * it (a number as itself, anything else as 0), read and written back
     * under the entry's lock with its fence (lockMerge()), so concurrent
     * increments of it count too. An entry removed between the read and
     * the increment is created with the offset (and the TTL ceiling).
     */
    private function addTo($key, int $offset, $group, string $function)
    {
        if (!$this->isValidKey($key, $function)) {
            return false;
        }
        $group = self::group($group);
        $id = $this->runtimeId($key, $group);
        unset($this->missing[$group][$id]);
        if (isset($this->non_persistent_groups[$group])) {
            if (!$this->inRuntime($group, $id)) {
                return false;
            }
            $value = $this->cache[$group][$id];
            $value = (is_numeric($value) ? $value : 0) + $offset;
            $this->cache[$group][$id] = $value < 0 ? 0 : $value;

            return $this->cache[$group][$id];
        }
        if (!$this->generations(true)) {
            return false;
        }
        $storeKey = $this->storeKey($key, $group);
        $offset = max(-PHP_INT_MAX, $offset);
        try {
            for ($attempt = 0; $attempt < 3; $attempt++) {
                $raw = $this->kv('get', $storeKey);
                if ($raw === null) {
                    unset($this->cache[$group][$id]);

                    return false;
                }
                if ((string) (int) $raw !== $raw) {
                    $value = $this->addToStored($storeKey, $offset, $function);
                    if ($value === self::UNREADABLE) {
                        continue; // a counter now: count it in the store
                    }
                    if ($value === false) {
                        unset($this->cache[$group][$id]);
                    } else {
                        $this->cache[$group][$id] = $value;
                    }

                    return $value;
                }
                try {
                    $sum = $this->kv('incr_by', $storeKey, $offset, $this->ttl(0));
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
                        // Before this decrement the entry held $sum - $offset:
                        // at or above 0, the deficit below 0 is this call's;
                        // below 0, another decrement's deficit was there
                        // already (it takes that back itself) and this
                        // call's whole offset is deficit.
                        $this->kv('incr_by', $storeKey, $sum >= $offset ? -$sum : -$offset);
                    }
                    $sum = 0;
                }
                $this->cache[$group][$id] = $sum;

                return $sum;
            }

            return false;
        } catch (\Ephpm\KvException $e) {
            $this->storeFailed($e, $function);

            return false;
        }
    }

    /**
     * addTo() of an entry that is not a counter, under the entry's lock:
     * read again, add WordPress's way, write with the lock's fence (a
     * request that took the lock over from this one makes the write
     * refused). The new value; false if the entry is gone, unreadable, or
     * the write was refused or failed (then it says why); UNREADABLE if it
     * is a counter now (the caller counts it in the store).
     */
    private function addToStored(string $storeKey, int $offset, string $function)
    {
        [, $lockName] = $this->mergeKeys($storeKey);
        $token = $this->lockMerge($lockName, $fence);
        if ($token === false) {
            $this->warn($function . ': the entry stayed locked by other requests; not counted');

            return false;
        }
        try {
            $raw = $this->kv('get', $storeKey);
            if ($raw === null) {
                return false;
            }
            if ((string) (int) $raw === $raw) {
                return self::UNREADABLE;
            }
            $value = $this->unpackStored($storeKey, $raw, $function);
            if ($value === self::UNREADABLE) {
                return false;
            }
            $value = (is_numeric($value) ? $value : 0) + $offset;
            if ($value < 0) {
                $value = 0;
            }
            try {
                $written = $this->kv('set_fenced', $storeKey, self::pack($value), $lockName, $fence, $this->ttl(0));
            } catch (\Ephpm\KvException $e) {
                if ($e->getCode() !== \Ephpm\KvException::OUT_OF_MEMORY) {
                    throw $e;
                }
                $written = null;
            } catch (\ValueError $e) {
                $written = null;
            }
            if ($written !== true) {
                // Refused: another request holds the entry now. No room:
                // the old entry would be stale, so it goes.
                $this->warn($function . ': ' . ($written === false ? 'the entry\'s lock was taken over; not counted' : $e->getMessage()));
                if ($written === null) {
                    $this->storeDelete($storeKey, $function);
                }

                return false;
            }

            return $value;
        } finally {
            $this->kv('unlock', $lockName, $token);
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
     * the stored array, under the lock "m" of the key, with the fence of
     * that lock's grant:
     *
     * 1. Read the version counter, then the stored array (one crossing;
     *    in that order, so the version held is never newer than the array).
     * 2. 'all': if the entry is missing, write nothing (its next reader
     *    rebuilds it from the database, which has this update). If an
     *    element this request changes was changed by another since the
     *    base, the order of the two database writes is unknown:
     *    invalidate. Else apply the changes.
     *    'not': apply every removal (an option that now exists); apply
     *    additions (an option found missing) only if the version is the
     *    base's, since an option added since then may be among them.
     * 3. Advance the version (announce); expect exactly the read value + 1,
     *    else another request advanced it unseen (an invalidation that
     *    needs no lock, or one whose lock lapsed): invalidate.
     * 4. Write the array if it changed, fenced (ephpm_kv_set_fenced): a
     *    grant of the lock since ours (ours lapsed, and another took it)
     *    refuses it, and we invalidate. Then read the version again and
     *    invalidate if it moved (an invalidation ran between 3 and 4).
     *
     * With no base it invalidates instead. The runtime cache gets the
     * merged array (or $data). True unless the store failed.
     */
    private function mergedSet(string $storeKey, string $kind, string $group, $id, $data, int $ttl): bool
    {
        [$versionKey, $lockName] = $this->mergeKeys($storeKey);
        $state = $this->mergeState[$storeKey] ?? ['base' => null, 'version' => false, 'present' => true];
        $this->cache[$group][$id] = $data;
        try {
            if (!is_array($data) || ($kind === 'all' && $state['base'] === null)) {
                // No base to take a difference from: the next reader
                // rebuilds the entry from the database.
                $this->forgetBase($storeKey, $kind, $data);
                $this->invalidate($storeKey, $versionKey, $lockName);

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
            if ($kind === 'not' && $removed === []) {
                return $this->addNotoptions($storeKey, $versionKey, $lockName, $group, $id, $data, $state, $changed, $ttl);
            }
            $token = $this->lockMerge($lockName, $fence);
            if ($token === false) {
                $this->forgetBase($storeKey, $kind, $data);
                $this->invalidate($storeKey, $versionKey, $lockName);

                return true;
            }
            try {
                // The generations too: a flush since this request read them
                // is adopted here, and the stored array of an older one is
                // missing.
                $read = $this->readGenerations([$versionKey, $storeKey]);
                $current = $this->mergedValue($read[$storeKey] ?? null, $group); // UNREADABLE: a conflict
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
                    $this->invalidate($storeKey, $versionKey, $lockName, true);

                    return true;
                }
                if ($kind === 'all' && $current === null && $this->mergedValue($this->kv('get', $storeKey), $group) !== null) {
                    // An add (it takes no lock: mergedAdd()) landed between
                    // our read and our announce; its database copy may
                    // predate this update, and its check saw no announce.
                    $this->forgetBase($storeKey, $kind, $data);
                    $this->invalidate($storeKey, $versionKey, $lockName, true);

                    return true;
                }
                if ($merged !== null && $merged !== $current) {
                    $written = $this->writeMerged($storeKey, $group, $merged, $lockName, $fence, $ttl);
                    if ($written !== true || $this->kv('get', $versionKey) !== $announced) {
                        $this->forgetBase($storeKey, $kind, $data);
                        $this->invalidate($storeKey, $versionKey, $lockName, true);

                        return $written !== null; // no room: not stored
                    }
                }
                // A 'not' request keeps its own additions, stored or not:
                // it saw those options missing, and its later removal of
                // one must reach the store (and announce itself).
                $view = $kind === 'not' ? array_replace($merged, $changed) : $merged;
                $this->mergeState[$storeKey] = ['base' => $view, 'version' => $announced, 'present' => true];
                $this->cache[$group][$id] = $view ?? $data;

                return true;
            } finally {
                $this->kv('unlock', $lockName, $token);
            }
        } catch (\Ephpm\KvException $e) {
            $this->forgetBase($storeKey, $kind, $data);
            $this->storeFailed($e, 'set');

            return false;
        } catch (\Throwable $e) {
            // A merged array the store cannot hold (over its value limit,
            // or with a value serialize() refuses): not cached.
            $this->warn('set: ' . $e->getMessage());
            try {
                $this->invalidate($storeKey, $versionKey, $lockName);
            } catch (\Ephpm\KvException $e) {
                $this->storeFailed($e, 'set');
            }

            return false;
        }
    }

    /**
     * A notoptions set that only adds ("option X does not exist", found in
     * the database): no lock and no announce. Read the version and the
     * array; if the version is still the base's, write the array with the
     * additions, then read the version again, and invalidate (without the
     * lock) if it moved. Three crossings, where a locked merge makes six.
     *
     * Additions need not announce: what an announce protects is a stale
     * "does not exist", and an addition is never stale against another
     * addition. This write can only lose something by landing over a
     * merge it did not read: a removal, which announced before its write,
     * so before this write and this check: the check sees it and
     * invalidates; or another request's additions, which are then lost,
     * and a lost addition only costs that option's next reader a database
     * query. A removal that announces after the check read the array
     * before its announce and writes after it, over this write.
     */
    private function addNotoptions(string $storeKey, string $versionKey, string $lockName, string $group, $id, array $data, array $state, array $changed, int $ttl): bool
    {
        $read = $this->readGenerations([$versionKey, $storeKey]);
        $version = $read[$versionKey] ?? null;
        $current = $this->mergedValue($read[$storeKey] ?? null, $group) ?? [];
        // The request keeps its own additions, stored or not (mergedSet()).
        $this->mergeState[$storeKey] = ['base' => $data, 'version' => false, 'present' => true];
        if ($state['version'] === false || $state['version'] !== $version || !is_array($current)) {
            return true; // an option may have been added since the base: dropped
        }
        $merged = array_replace($current, $changed);
        if ($merged !== $current) {
            try {
                $this->kv('set', $storeKey, $this->packMerged($group, $merged), $ttl);
            } catch (\Ephpm\KvException $e) {
                if ($e->getCode() !== \Ephpm\KvException::OUT_OF_MEMORY) {
                    throw $e;
                }
                $this->warn('set: ' . $e->getMessage());
                $this->invalidate($storeKey, $versionKey, $lockName, null);

                return false;
            }
            if ($this->kv('get', $versionKey) !== $version) {
                $this->invalidate($storeKey, $versionKey, $lockName, null);

                return true;
            }
        }
        $this->mergeState[$storeKey] = ['base' => array_replace($merged, $changed), 'version' => $version, 'present' => true];
        $this->cache[$group][$id] = array_replace($merged, $changed);

        return true;
    }

    /**
     * The fenced write of a merged array: true if written, false if the
     * fence refused it, null if the store has no room for it (OUT_OF_MEMORY,
     * which keeps the old entry) or refuses its size (ValueError). Then the
     * caller invalidates, which needs no room (a delete), and the store
     * stays in use.
     */
    private function writeMerged(string $storeKey, string $group, array $merged, string $lockName, int $fence, int $ttl): ?bool
    {
        try {
            return $this->kv('set_fenced', $storeKey, $this->packMerged($group, $merged), $lockName, $fence, $ttl);
        } catch (\Ephpm\KvException $e) {
            if ($e->getCode() !== \Ephpm\KvException::OUT_OF_MEMORY) {
                throw $e;
            }
        } catch (\ValueError $e) {
        }
        $this->warn('set: ' . $e->getMessage());

        return null;
    }

    /** "<site generation>.<group generation>|": what a merged array's value starts with, the generations it was written in. */
    private function stamp(string $group): string
    {
        return $this->siteGeneration . '.' . ($this->groupGenerations[$group] ?? 0) . '|';
    }

    /** A merged array as stored: stamped with this request's generations. */
    private function packMerged(string $group, array $array): string
    {
        return $this->stamp($group) . serialize($array);
    }

    /**
     * The array a merged entry holds; null if there is none, or if it was
     * written in other generations than this request's (a flush made it
     * unreachable); UNREADABLE if unserialize() throws (a conflict for a
     * merge, a miss for a read).
     */
    private function mergedValue(?string $raw, string $group)
    {
        if ($raw === null) {
            return null;
        }
        $stamp = $this->stamp($group);
        if (strncmp($raw, $stamp, strlen($stamp)) !== 0) {
            return null;
        }
        $value = self::unpack(substr($raw, strlen($stamp)));

        return is_array($value) ? $value : self::UNREADABLE;
    }

    /** The version counter and the merge lock of a merged array's entry: its kind letter 'v', 'm' for 'd' (one hash tag for the three). */
    private function mergeKeys(string $storeKey): array
    {
        $at = strlen($this->prefix) + 1;

        return [substr_replace($storeKey, 'v', $at, 1), substr_replace($storeKey, 'm', $at, 1)];
    }

    /**
     * Takes the lock $name for a merge (or the groups' entry), with its
     * fence: waits up to the lock wait, then takes it over from a holder
     * that kept it all that while (a killed or stalled request): that
     * holder's fenced write is refused from then on, so taking it over is
     * safe, and a dead holder costs one wait, not the lock's whole TTL.
     * False only if yet another request got it first.
     */
    private function lockMerge(string $name, &$fence)
    {
        $fence = 0;
        $this->store_calls++;
        $token = ($this->kvFunctions . 'lock')($name, self::MERGE_LOCK_TTL, $this->lockWait, null, $fence);
        if ($token === false) {
            $this->kv('lock_release_all', $name);
            $this->store_calls++;
            $token = ($this->kvFunctions . 'lock')($name, self::MERGE_LOCK_TTL, 0.0, null, $fence);
        }

        return $token;
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
            $this->mergeState[$storeKey] = ['base' => $data, 'version' => false, 'present' => true];
        } else {
            unset($this->mergeState[$storeKey]);
        }
    }

    /**
     * wp_cache_add() of a merged array (wp_load_alloptions() after a miss,
     * with the array it read from the database): stores it only if this
     * request's last read of the key was a miss, with ephpm_kv_setnx(),
     * and keeps it only if the version is still the one read with that
     * miss when read again after the setnx; else an update announced
     * itself in between, the array may lack it, and the add invalidates.
     *
     * No lock: the setnx and the check decide. An update U whose database
     * write this copy lacks wrote after the miss, so it announces after the
     * miss too. If it announces before the check, the check sees it. If
     * after, U's merge read the entry before its announce: a merge that
     * found this copy merges its change into it; one that found the entry
     * missing looks again after announcing (mergedSet()) and, finding this
     * copy, invalidates.
     *
     * Whatever the outcome, the request keeps its copy in its runtime
     * cache (with no base: its next set of the array invalidates), so a
     * refused add does not make every later get_option() of the request
     * read the database again.
     */
    private function mergedAdd(string $storeKey, string $group, $id, $data, int $ttl): bool
    {
        [$versionKey, $lockName] = $this->mergeKeys($storeKey);
        $state = $this->mergeState[$storeKey] ?? null;
        unset($this->mergeState[$storeKey]);
        $this->cache[$group][$id] = $data;
        if (!is_array($data) || $state === null || $state['base'] !== null || $state['version'] === false) {
            return false;
        }
        try {
            $stamp = $this->stamp($group);
            $packed = $this->packMerged($group, $data);
            // An entry of older generations (the miss was one) is replaced;
            // with none, the first of several adds stores its copy.
            if (($state['present'] ?? true) ? !$this->kv('set', $storeKey, $packed, $ttl) : !$this->kv('setnx', $storeKey, $packed, $ttl)) {
                return false;
            }
            $read = $this->readGenerations([$versionKey]);
            if (($read[$versionKey] ?? null) !== $state['version']) {
                // Without the lock: an add never waits for one.
                $this->invalidate($storeKey, $versionKey, $lockName, null);

                return false;
            }
            if ($this->stamp($group) !== $stamp) {
                // A flush since the miss: the copy went into the old
                // generations, where nobody reads it.
                return false;
            }
            $this->mergeState[$storeKey] = ['base' => $data, 'version' => $state['version'], 'present' => true];

            return true;
        } catch (\Ephpm\KvException $e) {
            // Out of memory: nothing was stored, the store stays in use.
            $this->storeFailed($e, 'add', $e->getCode() !== \Ephpm\KvException::OUT_OF_MEMORY);

            return false;
        } catch (\Throwable $e) {
            $this->warn('add: ' . $e->getMessage());

            return false;
        }
    }

    /**
     * Advances a merged array's version from $seen, the value read under
     * the lock (null: absent): a counter made anew starts at a random
     * value, with the TTL ceiling. Returns the new value, or null if it is
     * not exactly the next one (another request advanced it unseen).
     */
    private function advanceVersion(string $versionKey, ?string $seen): ?string
    {
        if ($seen === null) {
            $start = (string) self::counterStart();

            return $this->kv('setnx', $versionKey, $start, $this->ttl(0)) ? $start : null;
        }
        try {
            $next = $this->kv('incr_by', $versionKey, 1, $this->ttl(0));
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
     * database: delete, advance the version, delete again, holding the
     * merge lock ($held true: the caller holds it; false: it is taken here,
     * and its grant's fence refuses the write of any earlier holder still
     * running; null, or when it cannot be had: the same steps unlocked). A merge that read
     * before the advance sees the version move at its own advance or at its
     * check after writing, and a write that needs no lock (an add, a
     * notoptions addition) landing after the first delete is removed by
     * the second. True if the first delete removed an entry.
     */
    private function invalidate(string $storeKey, string $versionKey, string $lockName, ?bool $held = false): bool
    {
        $token = $held === false ? $this->lockMerge($lockName, $fence) : false;
        try {
            $removed = $this->kv('del', $storeKey) > 0;
            try {
                $next = $this->kv('incr_by', $versionKey, 1, $this->ttl(0));
            } catch (\Ephpm\KvException $e) {
                if ($e->getCode() !== \Ephpm\KvException::NOT_INTEGER && $e->getCode() !== \Ephpm\KvException::OVERFLOW) {
                    throw $e;
                }
                $next = 0;
            }
            if ($next < self::COUNTER_FLOOR) {
                // Made anew by the increment (or unusable): a random start,
                // never a value an old counter had. A reader that saw the
                // small value in between sees it move: the safe side.
                $this->kv('set', $versionKey, (string) self::counterStart(), $this->ttl(0));
            }
            $this->kv('del', $storeKey);
        } finally {
            if ($token !== false) {
                $this->kv('unlock', $lockName, $token);
            }
        }

        return $removed;
    }

    // ----------------------------------------------------------- helpers

    /** A random start for a counter made anew: never a value an old one had (COUNTER_FLOOR), exact in a double (COUNTER_CEILING). */
    private static function counterStart(): int
    {
        return random_int(self::COUNTER_FLOOR, self::COUNTER_CEILING);
    }

    /** The store's function ephpm_kv_<$function>(...$args): every call into the store goes through here, and is counted. */
    private function kv(string $function, ...$args)
    {
        $this->store_calls++;

        return ($this->kvFunctions . $function)(...$args);
    }

    /**
     * Turns the store off for the rest of the request (unless $off is
     * false) and logs one line per request.
     */
    private function storeFailed(\Throwable $e, string $operation, bool $off = true): void
    {
        if ($off) {
            $this->storeUp = false;
            $this->storeDownAt = hrtime(true);
            if (!in_array($operation, ['get', 'get_multiple', 'reading the generations', 'add'], true)) {
                // A write or delete whose outcome is unknown.
                $this->skippedWrites = true;
            }
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
        if (self::holdsResource($value)) {
            // serialize() would store it as i:0;.
            $this->warn($operation . ': a resource cannot be stored; it stays in this request\'s runtime cache');

            return null;
        }
        try {
            return self::pack($value);
        } catch (\Throwable $e) {
            // Closures, anonymous classes, and __serialize()/__sleep() that
            // throw or return what serialize() refuses (TypeError, Error).
            $this->warn($operation . ': ' . $e->getMessage());

            return null;
        }
    }

    /** Whether $value is a resource (open or closed), or an array holding one at any depth. */
    private static function holdsResource($value): bool
    {
        if (is_array($value)) {
            foreach ($value as $element) {
                if ((is_array($element) || (!is_scalar($element) && !is_object($element) && $element !== null)) && self::holdsResource($element)) {
                    return true;
                }
            }

            return false;
        }

        return is_resource($value) || gettype($value) === 'resource (closed)';
    }

    /**
     * unpack() of an entry read from the store; UNREADABLE if unserialize()
     * throws (a class changed since the value was stored: a typed property,
     * a __wakeup() or __unserialize() that throws). Such an entry is a miss:
     * it is logged (the request's one line) and removed, so that no later
     * request trips on it.
     */
    private function unpackStored(string $storeKey, string $raw, string $operation)
    {
        $value = self::unpack($raw);
        if ($value === self::UNREADABLE) {
            $this->warn($operation . ': a stored value cannot be unserialized (' . self::$unpackError . '); it is removed');
            $this->storeDelete($storeKey, $operation);
        }

        return $value;
    }

    /**
     * An integer at or above 0 as its digits (the store's counters count
     * on them), any other value serialized: floats too, so they come back
     * identical, and negative integers, so that digits below 0 in the store
     * are only ever a decrement's deficit on its way back (addTo()).
     */
    private static function pack($value): string
    {
        return is_int($value) && $value >= 0 ? (string) $value : serialize($value);
    }

    /** What pack() wrote (digits below 0: 0); false for a stored false; a string that is neither, as it is; UNREADABLE if unserialize() threw. */
    private static function unpack(string $raw)
    {
        if ((string) (int) $raw === $raw) {
            return max(0, (int) $raw);
        }
        try {
            $value = @unserialize($raw);
        } catch (\Throwable $e) {
            self::$unpackError = get_class($e) . ': ' . $e->getMessage();

            return self::UNREADABLE;
        }

        return $value === false && $raw !== 'b:0;' ? $raw : $value;
    }
}
