<?php

declare(strict_types=1);

use PHPUnit\Framework\TestCase;

const WPDROP_FILE = __DIR__ . '/../wordpress/object-cache.php';

require_once WPDROP_FILE;

// The few WordPress functions the drop-in asks for, as stubs that tests
// steer through globals (WordPress itself is not loaded).
if (!function_exists('is_multisite')) {
    function is_multisite()
    {
        return $GLOBALS['wpdrop_multisite'] ?? false;
    }
}
if (!function_exists('get_current_blog_id')) {
    function get_current_blog_id()
    {
        return $GLOBALS['wpdrop_blog_id'] ?? 1;
    }
}
if (!function_exists('wp_suspend_cache_addition')) {
    function wp_suspend_cache_addition($suspend = null)
    {
        if (is_bool($suspend)) {
            $GLOBALS['wpdrop_suspended'] = $suspend;
        }

        return $GLOBALS['wpdrop_suspended'] ?? false;
    }
}
if (!function_exists('_doing_it_wrong')) {
    function _doing_it_wrong($function, $message, $version)
    {
        $GLOBALS['wpdrop_doing_it_wrong'][] = "$function: $message ($version)";
    }
}

/** A class whose property has become typed since an entry of it was stored (testAnEntryThatCannotBeUnserializedIsAMissAndIsRemoved). */
final class WpdropTyped42
{
    public int $limit = 10;
}

/**
 * The test seam: WP_Object_Cache's option kv_functions => 'wpseam_kv_'
 * makes a request call these wrappers instead of ephpm_kv_*. Each counts
 * its call (per Fiber: a request run inside a Fiber can be paused at any
 * call, and so interleaved step by step with other requests) and runs the
 * actions a test put before or after the nth call of a function: 'pause'
 * (Fiber::suspend()), 'fail' (an Ephpm\KvException UNAVAILABLE, the call
 * done or not), or a callable.
 */
final class WpSeam
{
    /** @var list<string> every call, in order: "<fiber>:<function>" (fiber 0: none) */
    public static array $log = [];
    /** @var WeakMap<Fiber, array> per Fiber: counts and rules */
    private static ?WeakMap $fibers = null;
    /** @var array{counts: array<string, int>, rules: list<array>} outside any Fiber */
    private static array $top = ['counts' => [], 'rules' => []];
    /** @var list<Fiber> requests "killed" (never resumed): kept so they are not unwound before the test ends */
    private static array $killed = [];

    public static function reset(): void
    {
        self::$log = [];
        self::$fibers = new WeakMap();
        self::$top = ['counts' => [], 'rules' => []];
    }

    /** Runs $action ('pause', 'fail' or a callable) $when ('before' or 'after') the $n-th call of ephpm_kv_$function in $fiber (null: outside any). */
    public static function at(?Fiber $fiber, string $when, string $function, int $n, $action): void
    {
        $state = self::state($fiber);
        $state['rules'][] = [$when, $function, $n, $action];
        self::put($fiber, $state);
    }

    /** A request killed where it is paused: never resumed, its later calls (when PHP unwinds it at the end) fail. */
    public static function kill(Fiber $fiber): void
    {
        self::$killed[] = $fiber;
        $state = self::state($fiber);
        $state['killed'] = true;
        self::put($fiber, $state);
    }

    /** How many calls ephpm_kv_$function (null: any) was called in $fiber (null: outside any Fiber) so far. */
    public static function count(?Fiber $fiber = null, ?string $function = null): int
    {
        $counts = self::state($fiber)['counts'];

        return $function === null ? array_sum($counts) : ($counts[$function] ?? 0);
    }

    /** The functions called so far, in order ("lock,get_many,..."), in $fiber. */
    public static function trace(?Fiber $fiber = null): string
    {
        $id = $fiber === null ? 0 : spl_object_id($fiber);
        $names = [];
        foreach (self::$log as $entry) {
            [$of, $name] = explode(':', $entry, 2);
            if ((int) $of === $id) {
                $names[] = $name;
            }
        }

        return implode(',', $names);
    }

    public static function before(string $function): void
    {
        $fiber = Fiber::getCurrent();
        $state = self::state($fiber);
        if (!empty($state['killed'])) {
            throw new Ephpm\KvException('killed', Ephpm\KvException::UNAVAILABLE);
        }
        $state['counts'][$function] = ($state['counts'][$function] ?? 0) + 1;
        self::put($fiber, $state);
        self::$log[] = ($fiber === null ? 0 : spl_object_id($fiber)) . ':' . $function;
        self::run($fiber, 'before', $function, $state['counts'][$function]);
    }

    public static function after(string $function): void
    {
        $fiber = Fiber::getCurrent();
        self::run($fiber, 'after', $function, self::state($fiber)['counts'][$function]);
    }

    private static function run(?Fiber $fiber, string $when, string $function, int $n): void
    {
        foreach (self::state($fiber)['rules'] as [$w, $f, $at, $action]) {
            if ($w !== $when || $f !== $function || $at !== $n) {
                continue;
            }
            if ($action === 'pause') {
                Fiber::suspend("$when $function #$n");
            } elseif ($action === 'fail') {
                throw new Ephpm\KvException("injected failure $when $function #$n", Ephpm\KvException::UNAVAILABLE);
            } else {
                $action();
            }
        }
    }

    private static function state(?Fiber $fiber): array
    {
        if ($fiber === null) {
            return self::$top;
        }
        self::$fibers ??= new WeakMap();

        return self::$fibers[$fiber] ?? ['counts' => [], 'rules' => []];
    }

    private static function put(?Fiber $fiber, array $state): void
    {
        if ($fiber === null) {
            self::$top = $state;
        } else {
            self::$fibers[$fiber] = $state;
        }
    }
}

foreach (['get', 'set', 'setnx', 'del', 'del_if_eq', 'exists', 'get_many', 'set_many', 'incr_by', 'unlock', 'set_fenced', 'lock_release_all', 'fence'] as $wpseamFunction) {
    if (!function_exists("wpseam_kv_$wpseamFunction")) {
        eval("function wpseam_kv_$wpseamFunction(...\$args) { WpSeam::before('$wpseamFunction'); \$result = ephpm_kv_$wpseamFunction(...\$args); WpSeam::after('$wpseamFunction'); return \$result; }");
    }
}
if (!function_exists('wpseam_kv_lock')) {
    function wpseam_kv_lock(string $name, int $ttl, float $wait = 0.0, ?string $token = null, &$fence = null)
    {
        WpSeam::before('lock');
        $result = ephpm_kv_lock($name, $ttl, $wait, $token, $fence);
        WpSeam::after('lock');

        return $result;
    }
}

/**
 * php/wordpress/object-cache.php on the backend of this run. Two
 * WP_Object_Cache instances in one process stand for two requests (each has
 * its own runtime cache, both share the store), which lets the tests of the
 * merged option arrays interleave requests step by step on every backend;
 * the races between processes run on shared backends only.
 */
final class WordPressObjectCacheTest extends TestCase
{
    private string $site;

    protected function setUp(): void
    {
        $this->site = 'wpt-' . bin2hex(random_bytes(6));
        WpSeam::reset();
        $GLOBALS['wp_object_cache'] = $this->request();
        $GLOBALS['wpdrop_doing_it_wrong'] = [];
    }

    protected function tearDown(): void
    {
        unset($GLOBALS['wpdrop_multisite'], $GLOBALS['wpdrop_blog_id'], $GLOBALS['wpdrop_suspended'], $GLOBALS['wp_object_cache']);
    }

    /** A new request on this test's site (a runtime cache of its own), calling the store through the seam (WpSeam). */
    private function request(array $options = []): WP_Object_Cache
    {
        return new WP_Object_Cache($options + ['prefix' => $this->site, 'kv_functions' => 'wpseam_kv_']);
    }

    /** The store calls $operation makes in $cache, counted by the seam; asserts that store_calls counted each. */
    private function calls(WP_Object_Cache $cache, callable $operation): int
    {
        $seam = WpSeam::count();
        $counted = $cache->store_calls;
        $operation();
        $made = WpSeam::count() - $seam;
        $this->assertSame($made, $cache->store_calls - $counted, 'store_calls counts every call: ' . WpSeam::trace());

        return $made;
    }

    private function skipUnlessShared(): void
    {
        if (ini_get('ephpm.kv_backend') === 'memory') {
            $this->markTestSkipped('processes share keys only through a shared backend (a segment, Redis)');
        }
    }

    /** alloptions as a request finds it: read with $force, stored by add after a miss (wp_load_alloptions()). */
    private function seedAlloptions(array $options, array $requestOptions = []): void
    {
        $seeder = $this->request($requestOptions);
        $this->assertFalse($seeder->get('alloptions', 'options', true));
        $this->assertTrue($seeder->add('alloptions', $options, 'options'));
    }

    /** What a new request reads for alloptions (false: no entry). */
    private function storedAlloptions(array $requestOptions = [])
    {
        return $this->request($requestOptions)->get('alloptions', 'options', true);
    }

    // ------------------------------------------------------------ the API

    public function testEveryFunctionOfTheApiIsDefinedAndTheBatchCallsAreSupported(): void
    {
        foreach (['init', 'add', 'add_multiple', 'replace', 'set', 'set_multiple', 'get', 'get_multiple', 'delete',
                  'delete_multiple', 'incr', 'decr', 'flush', 'flush_runtime', 'flush_group', 'supports',
                  'add_global_groups', 'add_non_persistent_groups', 'switch_to_blog', 'close', 'reset', 'get_stats'] as $name) {
            $this->assertTrue(function_exists("wp_cache_$name"), "wp_cache_$name");
        }
        foreach (['add_multiple', 'set_multiple', 'get_multiple', 'delete_multiple', 'flush_runtime', 'flush_group'] as $feature) {
            $this->assertTrue(wp_cache_supports($feature), $feature);
        }
        $this->assertFalse(wp_cache_supports('anything_else'));
        $this->assertTrue(wp_cache_close());
        wp_cache_init();
        $this->assertInstanceOf(WP_Object_Cache::class, $GLOBALS['wp_object_cache']);
        foreach (['cache', 'cache_hits', 'cache_misses', 'global_groups', 'blog_prefix'] as $property) {
            $this->assertTrue(property_exists($GLOBALS['wp_object_cache'], $property), $property);
        }
    }

    /** Every kind of value comes back identical from the store, through a request that did not write it. */
    public function testValuesRoundTripThroughTheStore(): void
    {
        $object = new stdClass();
        $object->name = 'post';
        $object->list = [1, 2];
        $values = [false, null, 0, '', '0', [], [1, 'a' => [2, null]], $object, true, 1.0, 0.1 + 0.2, -0.0, INF, -INF, NAN,
                   1e300, PHP_INT_MAX, PHP_INT_MIN, -12, '5', '007', '-0', ' 1', "bin\0ary", 'b:0;', 'i:5;'];
        foreach ($values as $i => $value) {
            $this->assertTrue(wp_cache_set("v$i", $value, 'types'));
        }
        $reader = $this->request();
        foreach ($values as $i => $value) {
            $found = null;
            $got = $reader->get("v$i", 'types', false, $found);
            $this->assertTrue($found, "v$i found");
            $this->assertSame(serialize($value), serialize($got), "v$i");
        }
        $this->assertSame((string) PHP_INT_MAX, ephpm_kv_get($reader->store_key('v' . array_search(PHP_INT_MAX, $values, true), 'types')), 'an int at or above 0 is stored as its digits');
        $this->assertSame('i:-12;', ephpm_kv_get($reader->store_key('v' . array_search(-12, $values, true), 'types')), 'a negative one serialized: digits below 0 are a deficit');
    }

    public function testAMissIsFalseWithFoundFalseAndAStoredFalseIsFound(): void
    {
        $found = null;
        $this->assertFalse(wp_cache_get('nothing', '', false, $found));
        $this->assertFalse($found);
        wp_cache_set('no', false);
        $found = null;
        $this->assertFalse($this->request()->get('no', '', false, $found));
        $this->assertTrue($found);
        $this->assertSame(1, $GLOBALS['wp_object_cache']->cache_misses);
    }

    public function testForceReadsTheStorePastTheRuntimeCache(): void
    {
        $a = $this->request();
        $b = $this->request();
        $a->set('k', 'one');
        $this->assertSame('one', $b->get('k'));
        $a->set('k', 'two');
        $this->assertSame('one', $b->get('k'), 'the runtime cache answers');
        $this->assertSame('two', $b->get('k', 'default', true));
        $this->assertSame('two', $b->get('k'), 'and the forced read refreshed it');
        $a->delete('k');
        $found = null;
        $this->assertFalse($b->get('k', 'default', true, $found));
        $this->assertFalse($found);
        $this->assertFalse($b->get('k'), 'a forced miss drops the runtime copy');
    }

    public function testObjectsAreClonedOnSetAndGet(): void
    {
        $post = new stdClass();
        $post->title = 'before';
        wp_cache_set('p', $post);
        $post->title = 'changed after set';
        $got = wp_cache_get('p');
        $this->assertSame('before', $got->title);
        $got->title = 'changed after get';
        $this->assertSame('before', wp_cache_get('p')->title);
        $this->assertNotSame(wp_cache_get('p'), wp_cache_get('p'));
    }

    public function testAnEmptyGroupIsDefaultAndGroupsAreApart(): void
    {
        wp_cache_set('k', 'in default', '');
        $reader = $this->request();
        $this->assertSame('in default', $reader->get('k', 'default'));
        $this->assertSame('in default', $reader->get('k', '0'), "'0' is empty(), as WordPress reads it");
        $this->assertFalse($reader->get('k', 'other'));
        wp_cache_set('k', 'in other', 'other');
        $this->assertSame('in other', $this->request()->get('k', 'other'));
        $this->assertSame('in default', $this->request()->get('k'));
    }

    public function testNonPersistentGroupsStayInTheRuntimeCache(): void
    {
        $a = $this->request();
        $a->add_non_persistent_groups(['counts', 'plugins']);
        $this->assertTrue($a->set('k', 'local', 'counts'));
        $this->assertTrue($a->add('new', 1, 'counts'));
        $this->assertFalse($a->add('new', 2, 'counts'), 'the runtime cache decides an add in a non-persistent group');
        $this->assertSame(3, $a->incr('new', 2, 'counts'));
        $this->assertSame(0, $a->decr('new', 5, 'counts'));
        $this->assertTrue($a->replace('k', 'replaced', 'counts'));
        $this->assertSame('replaced', $a->get('k', 'counts', true), '$force has no store to read');
        $this->assertSame(['k' => 'replaced', 'x' => false], $a->get_multiple(['k', 'x'], 'counts'));
        $this->assertSame([], $a->add_multiple([], 'counts'));
        $this->assertSame(['m' => true], $a->set_multiple(['m' => 1], 'counts'));
        $this->assertNull(ephpm_kv_get($a->store_key('k', 'counts')));
        $this->assertNull(ephpm_kv_get($a->store_key('new', 'counts')));
        $this->assertNull(ephpm_kv_get($a->store_key('m', 'counts')));
        $this->assertFalse($this->request()->get('k', 'counts'));
        $this->assertTrue($a->delete('k', 'counts'));
        $this->assertFalse($a->delete('k', 'counts'));
        $this->assertTrue($a->flush_group('counts'));
        $this->assertFalse($a->get('m', 'counts'));
    }

    public function testBlogsKeepPerBlogGroupsApartAndShareGlobalGroups(): void
    {
        $GLOBALS['wpdrop_multisite'] = true;
        $a = $this->request();
        $this->assertSame('1:', $a->blog_prefix);
        $a->add_global_groups(['users', 'site-options']);
        $a->set('k', 'blog 1', 'posts');
        $a->set('u', 'everyone', 'users');
        $a->switch_to_blog(2);
        $this->assertSame('2:', $a->blog_prefix);
        $this->assertFalse($a->get('k', 'posts'));
        $this->assertSame('everyone', $a->get('u', 'users'));
        $a->set('k', 'blog 2', 'posts');

        $GLOBALS['wpdrop_blog_id'] = 2;
        $b = $this->request();
        $b->add_global_groups('users');
        $this->assertSame('blog 2', $b->get('k', 'posts'));
        $this->assertSame('everyone', $b->get('u', 'users'));
        $b->switch_to_blog(1);
        $this->assertSame('blog 1', $b->get('k', 'posts'));
        $this->assertSame('everyone', $b->get('u', 'users'));
        $this->assertNotSame($b->store_key('k', 'posts'), (function () use ($b) {
            $b->switch_to_blog(2);
            return $b->store_key('k', 'posts');
        })());

        // A site that is not multisite has one scope.
        unset($GLOBALS['wpdrop_multisite']);
        $single = $this->request();
        $single->switch_to_blog(5);
        $this->assertSame('', $single->blog_prefix);
    }

    /** add() asks the store even when a get put the key in the runtime cache, and one of two requests wins. */
    public function testAddHasOneWinnerAndAlwaysAsksTheStore(): void
    {
        $a = $this->request();
        $b = $this->request();
        $this->assertTrue($a->add('k', 'a'));
        $this->assertFalse($b->add('k', 'b'));
        $this->assertSame('a', $b->get('k'));
        $this->assertTrue($a->delete('k'));
        $this->assertTrue($b->add('k', 'b'), 'the store has no entry, whatever the runtime cache holds');
        $this->assertFalse($a->add('k', 'a again'));
        $this->assertSame('b', $a->get('k'), 'a lost add leaves the store value to be read');
        $this->assertSame(['k' => false, 'k2' => true], $a->add_multiple(['k' => 1, 'k2' => 2]));
        $this->assertSame(2, $this->request()->get('k2'));
    }

    public function testAddDoesNothingWhileCacheAdditionIsSuspended(): void
    {
        wp_suspend_cache_addition(true);
        $this->assertFalse(wp_cache_add('k', 1));
        wp_suspend_cache_addition(false);
        $this->assertFalse($this->request()->get('k'));
        $this->assertTrue(wp_cache_add('k', 1));
    }

    public function testReplaceStoresOnlyOverAnEntry(): void
    {
        $this->assertFalse(wp_cache_replace('k', 1));
        $this->assertFalse($this->request()->get('k'));
        wp_cache_set('k', 1);
        $this->assertTrue($this->request()->replace('k', 2));
        $this->assertSame(2, $this->request()->get('k'));
        $a = $this->request();
        $this->assertSame(2, $a->get('k'));
        $this->request()->delete('k');
        $this->assertFalse($a->replace('k', 3), 'the store decides, not the runtime copy');
        $this->assertFalse($a->get('k'));
    }

    public function testDeleteSaysWhetherTheStoreHadTheKey(): void
    {
        wp_cache_set('a', 1);
        wp_cache_set('b', 2);
        $other = $this->request();
        $this->assertTrue($other->delete('a'));
        $this->assertFalse($other->delete('a'));
        $this->assertSame(['b' => true, 'c' => false], $other->delete_multiple(['b', 'c']));
        $this->assertFalse(wp_cache_get('a', '', true));
        $this->assertFalse(wp_cache_get('b', '', true));
    }

    public function testIncrAndDecrFollowWordPress(): void
    {
        $this->assertFalse(wp_cache_incr('missing'));
        $this->assertFalse(wp_cache_decr('missing'));
        $this->assertNull(ephpm_kv_get($GLOBALS['wp_object_cache']->store_key('missing')), 'a missing key is not created');

        wp_cache_set('n', 5);
        $this->assertSame(8, wp_cache_incr('n', 3));
        $this->assertSame(7, wp_cache_decr('n'));
        $this->assertSame(0, wp_cache_decr('n', 10), 'clamped at 0');
        $this->assertSame('0', ephpm_kv_get($GLOBALS['wp_object_cache']->store_key('n')));
        $this->assertSame(2, wp_cache_incr('n', '2'));
        $this->assertSame(0, wp_cache_incr('n', -5), 'a negative offset clamps too');
        $this->assertSame(0, $this->request()->get('n'));

        wp_cache_set('s', 'not a number');
        $this->assertSame(2, wp_cache_incr('s', 2), 'a value that is no number counts as 0');
        $this->assertSame('2', ephpm_kv_get($GLOBALS['wp_object_cache']->store_key('s')), 'and becomes a counter');
        wp_cache_set('f', 1.5);
        $this->assertSame(2.5, wp_cache_incr('f'));
        $this->assertSame(2.5, $this->request()->get('f'));
        wp_cache_set('d', '5');
        $this->assertSame(6, wp_cache_incr('d'));
        wp_cache_set('b', false);
        $this->assertSame(0, wp_cache_decr('b'));
        wp_cache_set('big', PHP_INT_MAX);
        $this->assertFalse(wp_cache_incr('big'), 'the store refuses an overflow');
        $this->assertSame(PHP_INT_MAX, $this->request()->get('big'));
    }

    /** WordPress clamps an increment of a stored negative number at 0, and stores the 0 (s10: it stored -4). */
    public function testIncrOfAStoredNegativeNumberStoresZero(): void
    {
        wp_cache_set('n', -5);
        $this->assertSame(0, wp_cache_incr('n', 1));
        $this->assertSame(0, $this->request()->get('n'));
        $this->assertSame(3, wp_cache_incr('n', 3), 'and counts from there');
        $this->assertSame(3, $this->request()->get('n'));
    }

    /**
     * set_multiple() with a merged array among its keys sets that one once
     * (merged), even when the batch is refused with a ValueError and its
     * entries are set one by one.
     */
    public function testSetMultipleSetsAMergedArrayOnce(): void
    {
        $cache = $this->request();
        $this->assertFalse($cache->get('alloptions', 'options'));
        $this->seedAlloptions(['x' => '0']); // the request has no base: its set invalidates
        WpSeam::at(null, 'before', 'set_many', WpSeam::count(null, 'set_many') + 1, function () {
            throw new ValueError('a value over the limit');
        });
        $advances = WpSeam::count(null, 'incr_by');
        $this->assertSame(['alloptions' => true, 'plain' => true], $cache->set_multiple(['alloptions' => ['x' => '1'], 'plain' => 'p'], 'options'));
        $this->assertSame($advances + 1, WpSeam::count(null, 'incr_by'), 'one invalidation: the merged array was set once');
        $this->assertFalse($this->storedAlloptions());
        $this->assertSame('p', $this->request()->get('plain', 'options'), 'the batch, refused whole, was set key by key');
    }

    /** flush_group() forgets the merge bases of its own group only. */
    public function testFlushGroupKeepsOtherGroupsMergeBases(): void
    {
        $this->seedAlloptions(['x' => '0']);
        $cache = $this->request();
        $all = $cache->get('alloptions', 'options', true);
        $this->assertTrue($cache->flush_group('posts'));
        $all['x'] = '1';
        $this->assertTrue($cache->set('alloptions', $all, 'options'));
        $this->assertSame(['x' => '1'], $this->storedAlloptions(), 'merged: its base was kept');
        $this->assertTrue($cache->flush_group('options'));
        $this->assertTrue($cache->set('alloptions', ['x' => '2'], 'options'));
        $this->assertFalse($this->storedAlloptions(), "the flushed group's base is gone: invalidated");
    }

    public function testExpireBecomesAStoreTtlUnderTheCeiling(): void
    {
        $cache = $this->request();
        $ttl = fn (string $key): int => ephpm_kv_ttl($cache->store_key($key));
        $cache->set('e100', 1, '', 100);
        $this->assertGreaterThan(0, $ttl('e100'));
        $this->assertLessThanOrEqual(100, $ttl('e100'));
        $cache->set('string', 1, '', '30');
        $this->assertLessThanOrEqual(30, $ttl('string'));
        $this->assertGreaterThan(0, $ttl('string'));
        foreach (['zero' => 0, 'negative' => -5, 'word' => 'soon', 'null' => null, 'huge' => 1e12] as $key => $expire) {
            $cache->set($key, 1, '', $expire);
            $this->assertGreaterThan(WP_Object_Cache::DEFAULT_MAX_TTL - 60, $ttl($key), $key);
            $this->assertLessThanOrEqual(WP_Object_Cache::DEFAULT_MAX_TTL, $ttl($key), $key);
        }
        $cache->add('added', 1, '', 0);
        $this->assertLessThanOrEqual(WP_Object_Cache::DEFAULT_MAX_TTL, $ttl('added'));
        $this->assertGreaterThan(0, $ttl('added'));
        $cache->set_multiple(['m' => 1], '', 50);
        $this->assertLessThanOrEqual(50, $ttl('m'));

        $unbounded = $this->request(['max_ttl' => 0]);
        $unbounded->set('forever', 1);
        $this->assertSame(-1, ephpm_kv_ttl($unbounded->store_key('forever')));
        $unbounded->set('long', 1, '', 1e12);
        $this->assertGreaterThan(2147483000, ephpm_kv_ttl($unbounded->store_key('long')));
    }

    public function testLongKeysAreHashedIntoValidStoreKeys(): void
    {
        $long = str_repeat('option_name_', 500);
        wp_cache_set($long . 'a', 'A', 'options');
        wp_cache_set($long . 'b', 'B', 'options');
        $reader = $this->request();
        $this->assertSame('A', $reader->get($long . 'a', 'options'));
        $this->assertSame('B', $reader->get($long . 'b', 'options'));
        $this->assertLessThanOrEqual(4096, strlen($reader->store_key($long . 'a', 'options')));
        $this->assertNotSame($reader->store_key($long . 'a', 'options'), $reader->store_key($long . 'b', 'options'));
        $this->assertSame('G', (function () use ($long) {
            wp_cache_set('k', 'G', $long);
            return $this->request()->get('k', $long);
        })(), 'a long group too');
    }

    /** The batch calls make one store call each (counted by the seam, and by store_calls). */
    public function testBatchCallsAreOneStoreCrossing(): void
    {
        $writer = $this->request();
        $writer->get('warm'); // reads the generations
        $this->assertSame(1, $this->calls($writer, fn () => $this->assertSame(['a' => true, 'b' => true, 7 => true, '' => false],
            $writer->set_multiple(['a' => 1, 'b' => [2], 7 => 'seven', '' => 'x'], 'batch'))));
        $this->assertCount(1, $GLOBALS['wpdrop_doing_it_wrong']);
        $this->assertStringStartsWith('WP_Object_Cache::set_multiple: ', $GLOBALS['wpdrop_doing_it_wrong'][0]);

        $reader = $this->request();
        $reader->get('warm');
        $this->assertSame(1, $this->calls($reader, fn () => $this->assertSame(['b' => [2], 'missing' => false, 'a' => 1, 7 => 'seven'],
            $reader->get_multiple(['b', 'missing', 'a', 7], 'batch'))));
        $writer->set('a', 'changed', 'batch');
        $this->assertSame(0, $this->calls($reader, fn () => $this->assertSame(['a' => 1], $reader->get_multiple(['a'], 'batch'))), 'the runtime cache answers');
        $this->assertSame(1, $this->calls($reader, fn () => $this->assertSame(['a' => 'changed'], $reader->get_multiple(['a'], 'batch', true))));
        $this->assertSame(['a' => false, 'c' => true], $reader->add_multiple(['a' => 0, 'c' => 3], 'batch'));
        $this->assertSame(['a' => true, 'c' => true, 'z' => false], $reader->delete_multiple(['a', 'c', 'z'], 'batch'));
        $this->assertSame(['a' => false, 'b' => [2], 'c' => false], $this->request()->get_multiple(['a', 'b', 'c'], 'batch'));
    }

    /**
     * store_calls counts every call into the store, on every path (the
     * seam counts the real ones); a version counter the drop-in makes
     * always has a TTL under the ceiling, even one an increment makes anew.
     */
    public function testStoreCallsCountEveryCallAndCountersKeepTheCeiling(): void
    {
        $cache = $this->request();
        $this->seedAlloptions(['x' => '0']);
        $operations = [
            fn () => $cache->get('k'), fn () => $cache->set('k', 1), fn () => $cache->add('k', 2), fn () => $cache->replace('k', 3),
            fn () => $cache->incr('k'), fn () => $cache->decr('k', 10), fn () => $cache->get('k', 'default', true),
            fn () => $cache->delete('k'), fn () => $cache->get_multiple(['k', 'l']), fn () => $cache->set_multiple(['k' => 1, 'l' => 2]),
            fn () => $cache->add_multiple(['m' => 1]), fn () => $cache->delete_multiple(['k', 'l']),
            fn () => $cache->get('alloptions', 'options', true), fn () => $cache->set('alloptions', ['x' => '1'], 'options'),
            fn () => $cache->get('notoptions', 'options'), fn () => $cache->set('notoptions', ['n' => true], 'options'),
            fn () => $cache->delete('alloptions', 'options'), fn () => $cache->flush_group('g'), fn () => $cache->flush(),
        ];
        foreach ($operations as $operation) {
            $this->calls($cache, $operation);
        }
        // An invalidation that finds the version counter holding no integer replaces it.
        $versionKey = $cache->store_key('alloptions', 'options', 'v');
        ephpm_kv_set($versionKey, 'not a number', 60);
        $this->calls($cache, fn () => $cache->delete('alloptions', 'options'));
        $this->assertMatchesRegularExpression('/^\d+$/', ephpm_kv_get($versionKey));

        // The counter vanishes (evicted, expired) just before the increment that advances it: made anew, with the ceiling.
        $cache = $this->request(['max_ttl' => 600]);
        $versionKey = $cache->store_key('alloptions', 'options', 'v');
        $cache->delete('alloptions', 'options'); // the counter exists
        WpSeam::at(null, 'before', 'incr_by', WpSeam::count(null, 'incr_by') + 1, fn () => ephpm_kv_del($versionKey));
        $cache->delete('alloptions', 'options');
        $this->assertGreaterThan(0, ephpm_kv_ttl($versionKey), 'a counter with no TTL would outlive the ceiling');
        $this->assertLessThanOrEqual(600, ephpm_kv_ttl($versionKey));
    }

    /** The Redis Cluster hash tag of $key, as the server finds it: between the first "{" and the next "}", if not empty. */
    private static function hashTag(string $key): string
    {
        $open = strpos($key, '{');
        $close = $open === false ? false : strpos($key, '}', $open + 1);

        return $open === false || $close === false || $close === $open + 1 ? $key : substr($key, $open + 1, $close - $open - 1);
    }

    /**
     * On a Redis Cluster a fenced write needs its key in its lock's slot:
     * a merged array's entry, version counter and lock share one hash tag,
     * and so do the groups' entry and its lock, whatever braces the salt,
     * the group or the key hold.
     */
    public function testFencedKeysShareTheirLocksHashTag(): void
    {
        foreach (['plain', 'with {braces}', '}{', str_repeat('{x}', 100)] as $salt) {
            $cache = $this->request(['prefix' => $salt]);
            $prefix = $cache->get_stats()['prefix'];
            $this->assertFalse(strpbrk($prefix, '{}'), $salt);
            foreach ([['alloptions', 'options'], ['notoptions', 'options'], ['1:notoptions', 'site-options'], ['a}b{c', 'g{r}p']] as [$key, $group]) {
                $tag = self::hashTag($cache->store_key($key, $group));
                $this->assertNotSame($cache->store_key($key, $group), $tag, "$salt $key: has a tag");
                $this->assertSame($tag, self::hashTag($cache->store_key($key, $group, 'v')));
                $this->assertSame($tag, self::hashTag($cache->store_key($key, $group, 'm')));
            }
            $groupsKey = $prefix . '|{' . $prefix . '|groups}';
            $this->assertSame(self::hashTag($groupsKey), self::hashTag($groupsKey . '.lock'));
            $cache->flush_group('g'); // it uses those names
            $this->assertIsString(ephpm_kv_get($groupsKey));
        }
    }

    /**
     * A page's hot path: the first reading fetches the generations,
     * alloptions and notoptions with their versions in one crossing; a
     * miss is remembered for the request (a forced read, an add or a set
     * still reach the store); a notoptions addition costs three crossings.
     */
    public function testAPageReadsItsOptionsWithTheGenerationsAndRemembersMisses(): void
    {
        $this->seedAlloptions(['siteurl' => 'http://x']);
        $seed = $this->request();
        $seed->get('notoptions', 'options');
        $seed->set('notoptions', ['missing_one' => true], 'options');

        $page = $this->request();
        $this->assertSame(1, $this->calls($page, function () use ($page) {
            $this->assertSame(['siteurl' => 'http://x'], $page->get('alloptions', 'options'));
            $this->assertSame(['missing_one' => true], $page->get('notoptions', 'options'));
        }));
        $this->assertSame(1, $this->calls($page, fn () => $this->assertFalse($page->get('k', 'posts'))));
        $this->assertSame(0, $this->calls($page, fn () => $this->assertFalse($page->get('k', 'posts'))), 'a remembered miss');
        $this->assertSame(0, $this->calls($page, fn () => $this->assertSame(['k' => false], $page->get_multiple(['k'], 'posts'))));
        $this->request()->set('k', 'elsewhere', 'posts');
        $this->assertFalse($page->get('k', 'posts'));
        $this->assertSame('elsewhere', $page->get('k', 'posts', true), '$force reads the store');
        $page->delete('k', 'posts');
        $this->assertFalse($page->get('k', 'posts'));
        $this->assertSame(1, $this->calls($page, fn () => $this->assertTrue($page->add('k', 'mine', 'posts'))), 'an add still asks the store');
        $this->assertSame('mine', $this->request()->get('k', 'posts'));

        $notoptions = $page->get('notoptions', 'options');
        $notoptions['missing_two'] = true; // get_option() of a missing option
        $this->assertSame(3, $this->calls($page, fn () => $page->set('notoptions', $notoptions, 'options')), 'read, write, check');
        $this->assertSame(['missing_one' => true, 'missing_two' => true], $this->request()->get('notoptions', 'options'));
    }

    /** Two requests each cache the absence of a different option: both additions are kept (s9: one was dropped). */
    public function testConcurrentNotoptionsAdditionsAreBothKept(): void
    {
        $a = $this->request();
        $b = $this->request();
        $na = $a->get('notoptions', 'options') ?: [];
        $nb = $b->get('notoptions', 'options') ?: [];
        $nb['plugin_b_missing'] = true;
        $b->set('notoptions', $nb, 'options');
        $na['plugin_a_missing'] = true;
        $a->set('notoptions', $na, 'options');
        $this->assertEqualsCanonicalizing(['plugin_a_missing' => true, 'plugin_b_missing' => true], $this->request()->get('notoptions', 'options'));
    }

    /**
     * A lock-free notoptions addition A reads, then a removal R (add_option()
     * of an option in A's copy) merges and announces, then A writes its
     * copy over R's: A's check after its write sees R's announce and
     * invalidates. Without the check, "X does not exist" would be back.
     */
    public function testANotoptionsAdditionLandingOverARemovalInvalidates(): void
    {
        $seed = $this->request();
        $seed->get('notoptions', 'options');
        $seed->set('notoptions', ['x' => true], 'options');
        $a = $this->request();
        $fromA = $a->get('notoptions', 'options');
        $fromA['y'] = true;
        $fiber = new Fiber(fn () => $a->set('notoptions', $fromA, 'options'));
        WpSeam::at($fiber, 'after', 'get_many', 1, 'pause');
        $fiber->start();
        $r = $this->request();
        $fromR = $r->get('notoptions', 'options');
        unset($fromR['x']); // x was INSERTed
        $r->set('notoptions', $fromR, 'options');
        $this->assertSame([], $this->request()->get('notoptions', 'options'));
        $fiber->resume();
        $this->assertArrayNotHasKey('x', (array) $this->request()->get('notoptions', 'options'), 'x exists');
    }

    public function testFlushMakesOnlyThisSitesEntriesUnreachable(): void
    {
        $siteA = $this->request();
        $siteB = $this->request(['prefix' => $this->site . '-b']);
        $siteA->set('k', 'A');
        $siteB->set('k', 'B');
        $late = $this->request();
        $late->get('k'); // a request that read generation G

        $this->assertTrue($siteA->flush());
        $this->assertFalse($siteA->get('k'), 'the flushing request misses at once');
        $this->assertFalse($this->request()->get('k'));
        $this->assertSame('B', $this->request(['prefix' => $this->site . '-b'])->get('k', 'default', true), 'the other site keeps its entries');

        $late->set('written late', 'into G');
        $this->assertFalse($this->request()->get('written late'), 'a write into the old generation is unreachable');
        $siteA->set('k', 'A again');
        $this->assertSame('A again', $this->request()->get('k'));
    }

    /**
     * A flush overtakes a running request (s3): U read the generations
     * before it, R after. Merged arrays: U's merge reads the generations
     * under its lock, adopts the new ones and announces where R looks, so
     * R's add of a database copy older than U's update is refused; U's
     * removal from notoptions reaches R's generation.
     */
    public function testAFlushDoesNotSwitchOffTheMergeForRequestsAlreadyRunning(): void
    {
        $db = ['active_plugins' => 'none', 'blogname' => 'X'];
        $this->seedAlloptions($db);
        $u = $this->request();
        $u->get('alloptions', 'options');
        $this->request()->flush();
        $r = $this->request();
        $this->assertFalse($r->get('alloptions', 'options'), 'flushed');
        $copy = $db; // R: SELECT the autoloaded options
        $db['active_plugins'] = 'shop'; // U: UPDATE, then the cache
        $all = $u->get('alloptions', 'options', true);
        $this->assertFalse($all, "U's forced read is in the new generation too");
        $this->assertTrue($u->set('alloptions', ['active_plugins' => 'shop', 'blogname' => 'X'], 'options'));
        $this->assertFalse($r->add('alloptions', $copy, 'options'), "R's copy lacks U's update");
        $now = $this->storedAlloptions();
        $this->assertTrue($now === false || $now['active_plugins'] === 'shop', json_encode($now));

        // notoptions: add_option('shop_settings') in U (which began before the flush); R found it missing before the INSERT.
        $u = $this->request();
        $u->get('warm');
        $this->request()->flush();
        $r = $this->request();
        $no = $r->get('notoptions', 'options');
        $no = is_array($no) ? $no : [];
        $r->set('notoptions', $no, 'options');
        $n = $u->get('notoptions', 'options');
        $n = (is_array($n) ? $n : []) + ['shop_settings' => true];
        $u->set('notoptions', $n, 'options'); // get_option() inside add_option()
        unset($n['shop_settings']); // the INSERT, then "Yes, again"
        $u->set('notoptions', $n, 'options');
        $no['shop_settings'] = true; // R's get_option() caches what it found
        $r->set('notoptions', $no, 'options');
        $this->assertArrayNotHasKey('shop_settings', (array) $this->request()->get('notoptions', 'options'), 'the option exists');
    }

    /**
     * An ordinary delete after a database write (clean_post_cache()) by a
     * request a flush overtook: once its reading of the generations is
     * older than the maximum age (here 0, then the default 1 s) it reads
     * them again and deletes in the generation R cached the old post in.
     */
    public function testAWriteAfterAFlushReachesTheNewGenerationOnceItsReadingIsOld(): void
    {
        foreach ([0.0, null] as $maxAge) {
            $u = $this->request($maxAge === null ? [] : ['generation_max_age' => $maxAge]);
            $u->get('warm');
            $this->request()->flush();
            $r = $this->request();
            $r->get(42, 'posts');
            $r->set(42, 'title: old', 'posts');
            if ($maxAge === null) {
                usleep(1_100_000);
            }
            $read = hrtime(true);                  // before the delete reads the generations again
            $calls = $this->calls($u, fn () => $this->assertTrue($u->delete(42, 'posts'), 'it deleted the entry R cached'));
            $this->assertSame(2, $calls, 'the generations, then the delete');
            $this->assertFalse($this->request()->get(42, 'posts'));
            $calls = $this->calls($u, fn () => $u->set(43, 'x', 'posts'));
            if ($maxAge === null && hrtime(true) - $read >= 1e9) {
                // This host took the default's whole second since that
                // reading: it may be read again (its pace is not asserted).
                $this->assertContains($calls, [1, 2]);
            } else {
                $this->assertSame($maxAge === null ? 1 : 2, $calls, 'fresh for a while with the default: no more reading');
            }
        }
    }

    public function testFlushGroupMakesOneGroupUnreachable(): void
    {
        $a = $this->request();
        $a->set('k', 1, 'g1');
        $a->set('k', 2, 'g2');
        $this->assertTrue($a->flush_group('g1'));
        $this->assertFalse($a->get('k', 'g1'));
        $fresh = $this->request();
        $this->assertFalse($fresh->get('k', 'g1'));
        $this->assertSame(2, $fresh->get('k', 'g2'));
        $a->set('k', 'new', 'g1');
        $this->assertSame('new', $this->request()->get('k', 'g1'));
        $this->assertTrue($this->request()->flush_group('g1'));
        $this->assertFalse($this->request()->get('k', 'g1'), 'a second flush of the group');
        $this->assertSame(2, $this->request()->get('k', 'g2'));

        // A holder that keeps the groups' lock past the wait is taken over, and its fenced write is refused.
        $this->request()->set('k', 'again', 'g1');
        $cache = $this->request(['lock_wait' => 0.0]);
        $prefix = $cache->get_stats()['prefix'];
        $groupsKey = $prefix . '|{' . $prefix . '|groups}';
        $lock = $groupsKey . '.lock';
        $stale = ephpm_kv_get($groupsKey);
        $this->assertIsString(ephpm_kv_lock($lock, 30, 0.0, null, $fence));
        $this->assertTrue($cache->flush_group('g1'));
        $this->assertFalse($this->request()->get('k', 'g1'));
        $this->assertSame(2, $this->request()->get('k', 'g2'), 'a flush of the group, not of the site');
        $this->assertFalse(ephpm_kv_set_fenced($groupsKey, $stale, $lock, $fence), 'the old holder cannot send g1 back');

        // When yet another request takes the lock first, the whole site is flushed: a superset.
        $cache = $this->request(['lock_wait' => 0.0]);
        $cache->get('warm');
        $this->assertIsString(ephpm_kv_lock($lock, 30));
        WpSeam::at(null, 'before', 'lock', WpSeam::count(null, 'lock') + 2, fn () => ephpm_kv_lock($lock, 30));
        $this->assertTrue($cache->flush_group('g1'));
        $this->assertFalse($this->request()->get('k', 'g2'));
        ephpm_kv_lock_release_all($lock);
    }

    /**
     * flush_group()'s read-modify-write of the groups' entry by a request
     * whose lock lapsed while it stalled (paused after its read): another
     * flushes group h meanwhile; the stalled write is refused by the fence,
     * so h is not sent back to its earlier generation (the site is flushed
     * instead).
     */
    public function testAFlushGroupWhoseLockLapsedDoesNotUndoAnother(): void
    {
        $this->request()->set('k', 'g entry', 'g');
        $this->request()->set('k', 'h entry', 'h');
        $stalled = $this->request();
        $stalled->get('warm');
        $prefix = $stalled->get_stats()['prefix'];
        $fiber = new Fiber(fn () => $stalled->flush_group('g'));
        WpSeam::at($fiber, 'after', 'get', 1, 'pause'); // it has read the groups' entry
        $fiber->start();
        ephpm_kv_lock_release_all($prefix . '|{' . $prefix . '|groups}.lock'); // its lock lapses
        $this->assertTrue($this->request()->flush_group('h'));
        $this->assertFalse($this->request()->get('k', 'h'));
        $fiber->resume();
        $this->assertTrue($fiber->getReturn());
        $this->assertFalse($this->request()->get('k', 'h'), "h's flush holds");
        $this->assertFalse($this->request()->get('k', 'g'), "g's flush holds");
    }

    public function testFlushRuntimeKeepsTheStore(): void
    {
        wp_cache_set('k', 1);
        $this->assertTrue(wp_cache_flush_runtime());
        $this->assertSame([], $GLOBALS['wp_object_cache']->cache);
        $this->assertSame(1, wp_cache_get('k'));
    }

    /** A generation counter or group entry that is lost (evicted, removed) never brings old entries back. */
    public function testLostGenerationEntriesNeverResurrectOldEntries(): void
    {
        $prefix = $GLOBALS['wp_object_cache']->get_stats()['prefix'];
        $this->request()->flush_group('g'); // group g at generation 1
        wp_cache_set('k', 'old', 'g');
        ephpm_kv_del($prefix . '|{' . $prefix . '|groups}');
        $this->assertFalse($this->request()->get('k', 'g'), 'without the group entry a new site generation starts');
        $this->request()->set('k', 'new', 'g');
        $this->assertSame('new', $this->request()->get('k', 'g'));

        ephpm_kv_del($prefix . '|gen');
        $this->assertFalse($this->request()->get('k', 'g'), 'a counter made anew starts at a random value');
        $this->request()->set('k', 'newer', 'g');
        ephpm_kv_set($prefix . '|gen', '1');
        $this->assertFalse($this->request()->get('k', 'g'), 'a small counter is one that was made anew by an increment');
        $this->request()->set('k', 'newest', 'g');
        $this->assertSame('newest', $this->request()->get('k', 'g'));
    }

    public function testInvalidKeysAreRefusedAsWordPressDoes(): void
    {
        foreach (['', ' ', null, [], 1.5, true] as $key) {
            $this->assertFalse(wp_cache_set($key, 1));
            $this->assertFalse(wp_cache_get($key));
            $this->assertFalse(wp_cache_add($key, 1));
            $this->assertFalse(wp_cache_delete($key));
            $this->assertFalse(wp_cache_incr($key));
        }
        $this->assertCount(30, $GLOBALS['wpdrop_doing_it_wrong']);
        $this->assertSame('WP_Object_Cache::set: Cache key must not be an empty string. (6.1.0)', $GLOBALS['wpdrop_doing_it_wrong'][0]);
        $this->assertSame('WP_Object_Cache::set: Cache key must be integer or non-empty string, NULL given. (6.1.0)', $GLOBALS['wpdrop_doing_it_wrong'][10]);
        $this->assertTrue(wp_cache_set(0, 'zero'));
        $this->assertSame('zero', $this->request()->get(0));
    }

    public function testStatsPrintsAsWordPressDoesAndResetKeepsGlobalGroups(): void
    {
        wp_cache_add_global_groups('users');
        wp_cache_set('k', 1, 'posts');
        wp_cache_set('u', 1, 'users');
        wp_cache_get('k', 'posts');
        wp_cache_get('nothing');
        ob_start();
        $GLOBALS['wp_object_cache']->stats();
        $html = ob_get_clean();
        $this->assertStringContainsString('<strong>Cache Hits:</strong> 1<br />', $html);
        $this->assertStringContainsString('<strong>Cache Misses:</strong> 1<br />', $html);
        $this->assertStringContainsString('<strong>Group:</strong> posts - ( 0.', $html);
        wp_cache_reset();
        $this->assertSame(['users'], array_keys($GLOBALS['wp_object_cache']->cache));
        $stats = wp_cache_get_stats();
        $this->assertSame(1, $stats['hits']);
        $this->assertTrue($stats['store_up']);
    }

    // ------------------------------------------ the merged option arrays

    /**
     * WordPress's own semantics (the whole array written back): two
     * requests that each read alloptions and change a different option
     * leave only the last writer's change in the cache.
     */
    public function testPlainWholeArrayWritesLoseAConcurrentOptionUpdate(): void
    {
        $this->seedAlloptions(['siteurl' => 'http://x', 'blogname' => 'X'], ['merge_options' => false]);
        $a = $this->request(['merge_options' => false]);
        $b = $this->request(['merge_options' => false]);
        $fromA = $a->get('alloptions', 'options', true);
        $fromB = $b->get('alloptions', 'options', true);
        $fromA['a'] = 'by A';
        $fromB['b'] = 'by B';
        $a->set('alloptions', $fromA, 'options');
        $b->set('alloptions', $fromB, 'options');
        $stored = $this->storedAlloptions(['merge_options' => false]);
        $this->assertArrayNotHasKey('a', $stored, "A's update is lost");
        $this->assertSame('by B', $stored['b']);
    }

    public function testMergedWritesKeepConcurrentUpdatesOfDifferentOptions(): void
    {
        $this->seedAlloptions(['siteurl' => 'http://x', 'blogname' => 'X', 'gone' => '1']);
        $a = $this->request();
        $b = $this->request();
        $c = $this->request();
        $fromA = $a->get('alloptions', 'options', true);
        $fromB = $b->get('alloptions', 'options', true);
        $fromC = $c->get('alloptions', 'options', true);
        $fromA['a'] = 'by A';
        $fromB['blogname'] = 'by B';
        unset($fromC['gone']);
        $this->assertTrue($a->set('alloptions', $fromA, 'options'));
        $this->assertTrue($b->set('alloptions', $fromB, 'options'));
        $this->assertTrue($c->set('alloptions', $fromC, 'options'));
        $this->assertSame(['siteurl' => 'http://x', 'blogname' => 'by B', 'a' => 'by A'], $this->storedAlloptions());
        $this->assertSame(['siteurl' => 'http://x', 'blogname' => 'by B', 'a' => 'by A'], $c->get('alloptions', 'options'),
            'the runtime cache holds the merged array');

        // The same request again: its base is what it wrote.
        $fromC['later'] = 'by C';
        $c->set('alloptions', $c->get('alloptions', 'options') + ['later' => 'by C'], 'options');
        $this->assertSame('by C', $this->storedAlloptions()['later']);
        $this->assertSame('by A', $this->storedAlloptions()['a']);
    }

    public function testConcurrentChangesOfOneOptionInvalidateTheEntry(): void
    {
        $this->seedAlloptions(['x' => '0', 'y' => '0']);
        $a = $this->request();
        $b = $this->request();
        $fromA = $a->get('alloptions', 'options', true);
        $fromB = $b->get('alloptions', 'options', true);
        $fromA['x'] = 'A';
        $fromB['x'] = 'B';
        $a->set('alloptions', $fromA, 'options');
        $this->assertSame('A', $this->storedAlloptions()['x']);
        $this->assertTrue($b->set('alloptions', $fromB, 'options'));
        $this->assertFalse($this->storedAlloptions(), 'the order of the two database writes is unknown: the next reader rebuilds');
    }

    /** wp_load_alloptions() after a miss adds what it read from the database: refused if an update landed since the miss. */
    public function testAStaleAddAfterAMissIsRefused(): void
    {
        $a = $this->request();
        $this->assertFalse($a->get('alloptions', 'options', true));

        // Meanwhile an update: it finds the entry missing and writes nothing, but announces itself.
        $b = $this->request();
        $this->assertFalse($b->get('alloptions', 'options', true));
        $b->delete('alloptions', 'options');

        $this->assertFalse($a->add('alloptions', ['stale' => 'copy'], 'options'));
        $this->assertFalse($this->storedAlloptions());
        $this->assertSame(['stale' => 'copy'], $a->get('alloptions', 'options'), 'the request keeps its own database copy');
        $this->assertTrue($a->set('alloptions', ['stale' => 'copy', 'new' => '1'], 'options'));
        $this->assertFalse($this->storedAlloptions(), 'with no base: its set invalidates');

        // With no update in between, the add stores it.
        $c = $this->request();
        $this->assertFalse($c->get('alloptions', 'options', true));
        $this->assertTrue($c->add('alloptions', ['fresh' => 'copy'], 'options'));
        $this->assertSame(['fresh' => 'copy'], $this->storedAlloptions());

        // An add with no miss before it in this request cannot be checked: refused.
        $this->assertFalse($this->request()->add('alloptions', ['unchecked' => '1'], 'options'));
    }

    /**
     * wp_load_alloptions() as WordPress has it, counting its SELECTs: after
     * a refused add the request keeps its copy, so its later get_option()
     * calls neither read the database nor the store again (s5: 10 SELECTs
     * and 10 lock waits before). A held merge lock costs an add nothing.
     */
    public function testARefusedAddKeepsTheRequestsCopy(): void
    {
        // A lock wait of 60 s (a held lock of 600 s): one would show far past
        // the 30 s bound below, a hang catch, not a speed bound.
        $cache = $this->request(['lock_wait' => 60.0]);
        $selects = 0;
        $getOption = function (string $name) use ($cache, &$selects) {
            $all = $cache->get('alloptions', 'options');
            if (!$all) {
                $selects++;
                $all = ['siteurl' => 'http://x', 'home' => 'http://x'];
                $cache->add('alloptions', $all, 'options');
            }
            return $all[$name] ?? false;
        };
        $cache->get('warm');
        // An update announces between the miss and the add (a request of its own, outside the seam's count).
        // The merge lock is held throughout (a killed holder's, say).
        $lock = $cache->store_key('alloptions', 'options', 'm');
        WpSeam::at(null, 'before', 'setnx', WpSeam::count(null, 'setnx') + 1, function () use ($lock) {
            (new WP_Object_Cache(['prefix' => $this->site, 'lock_wait' => 0.0]))->delete('alloptions', 'options');
            $this->assertIsString(ephpm_kv_lock($lock, 600));
        });
        $start = microtime(true);
        $calls = $this->calls($cache, function () use ($getOption) {
            for ($i = 0; $i < 10; $i++) {
                $this->assertSame('http://x', $getOption('siteurl'));
            }
        });
        $this->assertSame(1, $selects);
        $this->assertLessThan(30, microtime(true) - $start, 'no lock wait');
        $this->assertSame(5, $calls, 'the setnx, its check, the invalidation (delete, advance, delete), once: the miss came with the first reading');
        $this->assertFalse($this->storedAlloptions());
        ephpm_kv_lock_release_all($lock);
    }

    /**
     * The add takes no lock; an update U that found the entry missing
     * looks again after its announce: P's add, which landed between U's
     * read and U's announce (so P's check saw no announce), is invalidated.
     * Without that second look P's copy, read from the database before U's
     * write, would stay.
     */
    public function testAnAddLandingBetweenAnUpdatesReadAndAnnounceIsInvalidated(): void
    {
        $this->seedAlloptions(['x' => '0']);
        $u = $this->request();
        $all = $u->get('alloptions', 'options', true);
        $this->request()->delete('alloptions', 'options'); // evicted, say
        $p = $this->request();
        $this->assertFalse($p->get('alloptions', 'options', true)); // P misses, then reads the database: x = 0
        $all['x'] = '1'; // U: UPDATE ... x = 1, then the cache
        $fiber = new Fiber(fn () => $u->set('alloptions', $all, 'options'));
        WpSeam::at($fiber, 'after', 'get_many', 1, 'pause'); // U read: missing
        $fiber->start();
        $this->assertTrue($p->add('alloptions', ['x' => '0'], 'options'), "P's check sees no announce yet");
        $fiber->resume();
        $this->assertTrue($fiber->getReturn());
        $this->assertFalse($this->storedAlloptions(), "P's stale copy is gone");
    }

    /** An update that announces between P's setnx and P's check: P's check sees it and removes P's copy. */
    public function testAnAddWhoseVersionMovedAfterItsSetnxIsRemoved(): void
    {
        $p = $this->request();
        $this->assertFalse($p->get('alloptions', 'options', true)); // P misses, reads the database
        $fiber = new Fiber(fn () => $p->add('alloptions', ['x' => 'stale'], 'options'));
        WpSeam::at($fiber, 'after', 'setnx', 1, 'pause');
        $fiber->start();
        $u = $this->request(); // U: UPDATE, then a merge into P's copy (the merge finds no conflict)
        $all = $u->get('alloptions', 'options', true);
        $this->assertSame(['x' => 'stale'], $all);
        $this->assertTrue($u->set('alloptions', ['x' => 'stale', 'y' => 'new'], 'options'));
        $fiber->resume();
        $this->assertFalse($fiber->getReturn());
        $this->assertFalse($this->storedAlloptions(), 'P cannot tell its copy from one that lacks a newer update: invalidated');
    }

    public function testAnUpdateOfAMissingEntryWritesNothingAndRefusesAPendingAdd(): void
    {
        $this->seedAlloptions(['x' => '0']);
        $pending = $this->request();
        $updater = $this->request();
        $all = $updater->get('alloptions', 'options', true);
        $this->request()->delete('alloptions', 'options');
        $this->assertFalse($pending->get('alloptions', 'options', true));
        $all['x'] = '1';
        $this->assertTrue($updater->set('alloptions', $all, 'options'));
        $this->assertFalse($this->storedAlloptions(), 'nothing written: the next reader rebuilds it');
        $this->assertFalse($pending->add('alloptions', ['x' => '0'], 'options'), 'read from the database before the update');
        $this->assertFalse($this->storedAlloptions());
    }

    public function testAWholeArrayWithoutABaseInvalidates(): void
    {
        $blind = $this->request();
        $this->assertFalse($blind->get('alloptions', 'options'));
        $this->seedAlloptions(['x' => '0']);
        $this->assertTrue($blind->set('alloptions', ['x' => 'blind'], 'options'));
        $this->assertFalse($this->storedAlloptions());
        $this->assertSame(['x' => 'blind'], $blind->get('alloptions', 'options'), 'the request keeps what it set');
    }

    /** A holder that keeps the merge lock past the wait (killed, stalled) is taken over; its fenced write is refused. */
    public function testAMergeLockHeldPastTheWaitIsTakenOver(): void
    {
        $this->seedAlloptions(['x' => '0', 'y' => '0']);
        $a = $this->request(['lock_wait' => 0.0]);
        $all = $a->get('alloptions', 'options', true);
        $lock = $a->store_key('alloptions', 'options', 'm');
        $this->assertIsString(ephpm_kv_lock($lock, 30, 0.0, null, $fence));
        $all['x'] = '1';
        $this->assertTrue($a->set('alloptions', $all, 'options'));
        $this->assertSame(['x' => '1', 'y' => '0'], $this->storedAlloptions(), 'merged under the lock it took over');
        $this->assertFalse(ephpm_kv_set_fenced($a->store_key('alloptions', 'options'), serialize(['x' => '0', 'y' => 'old holder']), $lock, $fence),
            'the old holder cannot write over it');
        $this->assertNull(ephpm_kv_lock_info($lock), 'released');
    }

    /**
     * The lapsed lock (s1): W1 advanced the version and stalls before its
     * write; its lock lapses; W2 takes the lock and reads the entry and the
     * version W1 left. W1's write, after W2's read, would be lost under
     * W2's (a lost update of another option), and W1's own check after it
     * sees nothing amiss. The fence refuses W1's write: W1 invalidates, and
     * W2's advance sees that. No update is lost: the entry holds both or is
     * rebuilt from the database.
     */
    public function testAMergeWhoseLockLapsedLosesNoUpdate(): void
    {
        $this->seedAlloptions(['x' => 'old', 'y' => 'old', 'z' => 'old']);
        $warm = $this->request();
        $this->assertTrue($warm->set('alloptions', ['z' => 'z2'] + $warm->get('alloptions', 'options', true), 'options'));
        $w1 = $this->request(['lock_wait' => 0.0]);
        $w2 = $this->request(['lock_wait' => 30.0]);
        $all1 = $w1->get('alloptions', 'options', true);
        $all1['x'] = 'new';
        $all2 = $w2->get('alloptions', 'options', true);
        $all2['y'] = 'new';
        $f1 = new Fiber(fn () => $w1->set('alloptions', $all1, 'options'));
        WpSeam::at($f1, 'after', 'incr_by', 1, 'pause'); // advanced, not written
        $f1->start();
        ephpm_kv_lock_release_all($w1->store_key('alloptions', 'options', 'm')); // its 5 s lock lapses
        $f2 = new Fiber(fn () => $w2->set('alloptions', $all2, 'options'));
        WpSeam::at($f2, 'after', 'get_many', 1, 'pause'); // locked, read
        $f2->start();
        $f1->resume();
        $this->assertTrue($f1->isTerminated(), WpSeam::trace($f1));
        $f2->resume();
        $this->assertTrue($f2->isTerminated());
        $stored = $this->storedAlloptions();
        if ($stored !== false) {
            $this->assertSame(['x' => 'new', 'y' => 'new', 'z' => 'z2'], $stored);
        }
        $this->addToAssertionCount(1);
    }

    /**
     * "Exactly + 1": the version moves between a merge's read under its
     * lock and its advance, unseen by it (an invalidation whose own lock
     * was taken over: its delete came before the merge's read, its advance
     * after). The merge must invalidate, not write the array it read.
     */
    public function testAVersionThatMovedUnseenInvalidates(): void
    {
        $this->seedAlloptions(['x' => '0']);
        $warm = $this->request(); // the version counter exists
        $this->assertTrue($warm->set('alloptions', ['y' => '1'] + $warm->get('alloptions', 'options', true), 'options'));
        $b = $this->request();
        $fromB = $b->get('alloptions', 'options', true);
        $this->assertEqualsCanonicalizing(['x' => '0', 'y' => '1'], $fromB, 'B has a base');
        $fromB['b'] = '1';
        $fiber = new Fiber(fn () => $b->set('alloptions', $fromB, 'options'));
        WpSeam::at($fiber, 'after', 'get_many', 1, 'pause'); // B read under its lock
        $fiber->start();
        ephpm_kv_incr_by($b->store_key('alloptions', 'options', 'v'), 1); // the unseen advance
        $fiber->resume();
        $this->assertTrue($fiber->getReturn());
        $this->assertFalse($this->storedAlloptions(), 'B saw its advance land on +2: invalidated');
    }

    /**
     * The check after the write: an invalidation that takes no lock (an
     * add's, a notoptions addition's) deletes, advances and deletes again
     * between a merge's advance and its write. The merge's write, of an
     * array read before that invalidation, lands after it; only the check
     * after the write sees the version move, and invalidates.
     */
    public function testAnInvalidationBetweenAMergesAdvanceAndWriteIsCaughtByItsCheck(): void
    {
        $this->seedAlloptions(['x' => '0', 'y' => '0']);
        $warm = $this->request(); // the version counter exists
        $this->assertTrue($warm->set('alloptions', ['y' => '1'] + $warm->get('alloptions', 'options', true), 'options'));
        $m = $this->request();
        $all = $m->get('alloptions', 'options', true);
        $all['x'] = '1';
        $fiber = new Fiber(fn () => $m->set('alloptions', $all, 'options'));
        WpSeam::at($fiber, 'after', 'incr_by', 1, 'pause'); // advanced, not written
        $fiber->start();
        $entry = $m->store_key('alloptions', 'options');
        ephpm_kv_del($entry);
        ephpm_kv_incr_by($m->store_key('alloptions', 'options', 'v'), 1);
        ephpm_kv_del($entry);
        $fiber->resume();
        $this->assertTrue($fiber->getReturn());
        $this->assertStringContainsString('set_fenced,get,del', WpSeam::trace($fiber));
        $this->assertFalse($this->storedAlloptions(), 'the array read before the invalidation is not left in the store');
    }

    /**
     * Invalidation's second delete: an add (no lock) after the first delete
     * and checked before the advance stores a database copy the
     * invalidation was meant to remove; the delete after the advance
     * removes it.
     */
    public function testAnInvalidationsSecondDeleteRemovesAnAddThatLandedInBetween(): void
    {
        $this->seedAlloptions(['x' => '0']);
        $p = $this->request();
        $p->get('warm');
        ephpm_kv_del($p->store_key('alloptions', 'options')); // evicted: P misses
        $this->assertFalse($p->get('alloptions', 'options', true));
        $i = $this->request(); // wp_cache_delete('alloptions') after a database change P's copy lacks
        $i->get('warm');
        $fiber = new Fiber(fn () => $i->delete('alloptions', 'options'));
        WpSeam::at($fiber, 'after', 'del', 1, 'pause');
        $fiber->start();
        $this->assertTrue($p->add('alloptions', ['x' => 'read before the change'], 'options'), 'its check comes before the advance');
        $fiber->resume();
        $this->assertFalse($this->storedAlloptions());
    }

    public function testNotoptionsAppliesRemovalsAlwaysAndAdditionsOnlyOverAnUnchangedVersion(): void
    {
        // A request finds the entry missing, sets [] (nothing to write), then marks an option missing.
        $a = $this->request();
        $this->assertFalse($a->get('notoptions', 'options'));
        $calls = $a->store_calls;
        $this->assertTrue($a->set('notoptions', [], 'options'));
        $this->assertSame($calls, $a->store_calls, 'an empty difference does not reach the store');
        $this->assertTrue($a->set('notoptions', ['o1' => true], 'options'));
        $this->assertSame(['o1' => true], $this->request()->get('notoptions', 'options'));

        $b = $this->request();
        $c = $this->request();
        $fromB = $b->get('notoptions', 'options');
        $fromC = $c->get('notoptions', 'options');
        $fromB['o2'] = true;
        $this->assertTrue($b->set('notoptions', $fromB, 'options'));
        unset($fromC['o1']); // add_option('o1'): it exists now
        $this->assertTrue($c->set('notoptions', $fromC, 'options'));
        $this->assertSame(['o2' => true], $this->request()->get('notoptions', 'options'), "B's addition and C's removal both hold");

        // D found o3 missing in the database before E added it: D's addition is dropped.
        $d = $this->request();
        $e = $this->request();
        $fromD = $d->get('notoptions', 'options');
        $fromE = $e->get('notoptions', 'options');
        $fromE['o3'] = true;
        $e->set('notoptions', $fromE, 'options');
        $fromE2 = $this->request()->get('notoptions', 'options');
        unset($fromE2['o3']);
        $adder = $this->request();
        $adder->get('notoptions', 'options');
        $adder->set('notoptions', $fromE2, 'options'); // add_option('o3')
        $fromD['o3'] = true;
        $this->assertTrue($d->set('notoptions', $fromD, 'options'));
        $this->assertArrayNotHasKey('o3', $this->request()->get('notoptions', 'options'), 'a stale "does not exist" is never stored');

        // A removal of an option another request never marked still announces itself.
        $f = $this->request();
        $g = $this->request();
        $fromF = $f->get('notoptions', 'options');
        $fromG = $g->get('notoptions', 'options');
        $fromG['o4'] = true;
        $g->set('notoptions', $fromG + ['o5' => true], 'options');
        $fromF['o5'] = true;
        unset($fromF['o2']);
        $f->set('notoptions', $fromF, 'options');
        $this->assertSame(['o4' => true, 'o5' => true], $this->request()->get('notoptions', 'options'));
    }

    /**
     * add_option()'s own steps: get_option() marks the option missing
     * (here dropped by the store: an update landed since this request's
     * read), the INSERT, then "Yes, again": the option is unset from the
     * request's notoptions and set. That removal must reach the store and
     * announce itself even though its addition never did, or a request that
     * found the option missing before the INSERT could store that later.
     */
    public function testAddOptionAnnouncesItsRemovalEvenWhenItsAdditionWasDropped(): void
    {
        $seed = $this->request();
        $this->assertFalse($seed->get('notoptions', 'options'));
        $seed->set('notoptions', ['gone' => true], 'options');
        $adder = $this->request();
        $this->assertSame(['gone' => true], $adder->get('notoptions', 'options'));
        $other = $this->request(); // add_option('gone') elsewhere: a removal, which announces
        $other->get('notoptions', 'options');
        $other->set('notoptions', ['unrelated' => true], 'options');
        $stale = $this->request();
        $fromStale = $stale->get('notoptions', 'options', true); // then it finds 'y' missing in the database

        $notoptions = $adder->get('notoptions', 'options');
        $notoptions['y'] = true; // get_option('y') in add_option()
        $adder->set('notoptions', $notoptions, 'options');
        $this->assertArrayNotHasKey('y', $this->request()->get('notoptions', 'options'), 'dropped: the version moved');
        // INSERT INTO wp_options ... 'y'
        $notoptions = $adder->get('notoptions', 'options');
        $this->assertArrayHasKey('y', $notoptions, 'the request keeps what it saw');
        if (isset($notoptions['y'])) {
            unset($notoptions['y']);
            $adder->set('notoptions', $notoptions, 'options');
        }

        $fromStale['y'] = true;
        $stale->set('notoptions', $fromStale, 'options');
        $this->assertSame(['unrelated' => true], $this->request()->get('notoptions', 'options'));
    }

    public function testNetworkNotoptionsAreMergedToo(): void
    {
        $GLOBALS['wpdrop_multisite'] = true;
        $request = function (): WP_Object_Cache {
            $cache = $this->request();
            $cache->add_global_groups(['site-options']);
            return $cache;
        };
        $a = $request();
        $b = $request();
        $this->assertTrue($a->set('1:notoptions', ['n0' => true], 'site-options'));
        $this->assertFalse($request()->get('1:notoptions', 'site-options'), 'an addition with no read before it has no version to check: dropped');
        $this->assertFalse($a->get('1:notoptions', 'site-options', true));
        $a->set('1:notoptions', ['n1' => true], 'site-options');
        $fromA = $a->get('1:notoptions', 'site-options', true);
        $fromB = $b->get('1:notoptions', 'site-options', true);
        $this->assertSame(['n1' => true], $fromB);
        $fromA['n2'] = true;
        unset($fromB['n1']);
        $a->set('1:notoptions', $fromA, 'site-options');
        $b->set('1:notoptions', $fromB, 'site-options');
        $this->assertSame(['n2' => true], $request()->get('1:notoptions', 'site-options'));
        $GLOBALS['wpdrop_blog_id'] = 2;
        $this->assertSame(['n2' => true], $request()->get('1:notoptions', 'site-options'), 'one entry for every blog');
    }

    // ---------------------------------------------------------- failures

    /**
     * Runs $code in a PHP process of its own with the drop-in loaded and
     * $ini; returns [stdout, stderr, exit status].
     *
     * @param array<string, string> $ini
     */
    private function child(string $code, array $ini, bool $extension = true): array
    {
        $cmd = [PHP_BINARY, '-n', '-d', 'error_reporting=-1', '-d', 'display_errors=stderr', '-d', 'log_errors=0'];
        if ($extension) {
            array_push($cmd, '-d', 'extension=' . getenv('EPHPM_SO'));
        }
        foreach ($ini as $name => $value) {
            array_push($cmd, '-d', "$name=$value");
        }
        array_push($cmd, '-r', 'require ' . var_export(WPDROP_FILE, true) . '; ' . $code);
        $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $stdout = stream_get_contents($pipes[1]);
        $stderr = stream_get_contents($pipes[2]);

        return [$stdout, $stderr, proc_close($proc)];
    }

    /** What the failure children run: every call, its result as JSON. */
    private const FAILING_REQUEST = <<<'PHP'
        wp_cache_init();
        $r = [];
        $r['set'] = wp_cache_set('k', 'v');
        $r['get'] = wp_cache_get('k', '', false, $found);
        $r['found'] = $found;
        $r['force'] = wp_cache_get('k', '', true);
        $r['miss'] = wp_cache_get('nothing', '', false, $missFound);
        $r['missFound'] = $missFound;
        $r['add'] = wp_cache_add('new', 1);
        $r['addAgain'] = wp_cache_add('new', 1);
        $r['replace'] = wp_cache_replace('k', 'w');
        $r['incr'] = wp_cache_incr('k');
        $r['delete'] = wp_cache_delete('k');
        $r['afterDelete'] = wp_cache_get('k');
        $r['setMultiple'] = wp_cache_set_multiple(['a' => 1, 'b' => 2]);
        $r['getMultiple'] = wp_cache_get_multiple(['a', 'zz']);
        $r['alloptions'] = wp_cache_get('alloptions', 'options', true);
        $r['addAlloptions'] = wp_cache_add('alloptions', ['x' => '1'], 'options');
        $r['setAlloptions'] = wp_cache_set('alloptions', ['x' => '2'], 'options');
        $r['flushGroup'] = wp_cache_flush_group('default');
        $r['flush'] = wp_cache_flush();
        $r['stats'] = wp_cache_get_stats()['store_up'];
        echo json_encode($r);
        PHP;

    private const FAILING_EXPECTED = [
        'set' => false, 'get' => 'v', 'found' => true, 'force' => 'v', 'miss' => false, 'missFound' => false,
        'add' => false, 'addAgain' => false, 'replace' => false, 'incr' => false, 'delete' => false, 'afterDelete' => false,
        'setMultiple' => ['a' => false, 'b' => false], 'getMultiple' => ['a' => 1, 'zz' => false],
        'alloptions' => false, 'addAlloptions' => false, 'setAlloptions' => false, 'flushGroup' => false, 'flush' => false,
        'stats' => false,
    ];

    public function testAnUnreachableStoreLeavesTheRequestOnItsRuntimeCacheWithOneWarningPerTry(): void
    {
        // Nothing listens on port 1: every call throws Ephpm\KvException (UNAVAILABLE).
        [$stdout, $stderr, $status] = $this->child(self::FAILING_REQUEST, ['ephpm.kv_backend' => '"redis://127.0.0.1:1?dial_timeout=300ms"']);
        $this->assertSame(0, $status, $stderr);
        $this->assertSame(self::FAILING_EXPECTED, json_decode($stdout, true));
        // One line for the failure, and one for wp_cache_flush(), which
        // empties the runtime cache and so tries the store again.
        $lines = explode("\n", trim($stderr));
        $this->assertCount(2, $lines, $stderr);
        foreach ($lines as $line) {
            $this->assertStringStartsWith('ephpm object cache: reading the generations: ', $line);
            $this->assertStringContainsString('this request goes on with its runtime cache only', $line);
        }
    }

    public function testWithoutTheExtensionWordPressRunsOnTheRuntimeCache(): void
    {
        [$stdout, $stderr, $status] = $this->child(self::FAILING_REQUEST, [], false);
        $this->assertSame(0, $status, $stderr);
        $this->assertSame(self::FAILING_EXPECTED, json_decode($stdout, true));
        $this->assertSame("ephpm object cache: the ephpm extension is not loaded\n", $stderr);
    }

    /** A write the store has no room for returns false and removes the old entry; the store stays in use. */
    public function testAWriteTheStoreCannotHoldRemovesTheOldEntry(): void
    {
        [$stdout, $stderr, $status] = $this->child(<<<'PHP'
            $a = new WP_Object_Cache(['prefix' => 'oom']);
            $r = [$a->set('k', 'small'), $a->set('k', str_repeat('x', 2 << 20)), (new WP_Object_Cache(['prefix' => 'oom']))->get('k', '', true),
                  $a->set('other', 'small'), (new WP_Object_Cache(['prefix' => 'oom']))->get('other'),
                  $a->add('big', str_repeat('y', 2 << 20)), $a->get_stats()['store_up']];
            echo json_encode($r);
            PHP, ['ephpm.kv_backend' => 'memory', 'ephpm.kv_memory_limit' => '1M']);
        $this->assertSame(0, $status, $stderr);
        $this->assertSame([true, false, false, true, 'small', false, true], json_decode($stdout, true));
        $this->assertCount(1, explode("\n", trim($stderr)), $stderr);
        $this->assertStringStartsWith('ephpm object cache: set: ', $stderr);
    }

    /**
     * A merge the store has no room for (OUT_OF_MEMORY keeps the old
     * entry): the stale alloptions would be served on; it is invalidated
     * instead (a delete needs no room), set() returns false, and the store
     * stays in use for the request.
     */
    public function testAMergeTheStoreHasNoRoomForInvalidatesAndKeepsTheStore(): void
    {
        [$stdout, $stderr, $status] = $this->child(<<<'PHP'
            $all = [];
            for ($i = 0; $i < 100; $i++) { $all["opt_$i"] = str_repeat('v', 1000); }
            $seed = new WP_Object_Cache(['prefix' => 'oom']);
            $seed->get('alloptions', 'options', true);
            $seeded = $seed->add('alloptions', $all, 'options');
            for ($i = 0; ; $i++) { try { ephpm_kv_set("filler$i", str_repeat('f', 4000)); } catch (\Ephpm\KvException $e) { break; } }
            $u = new WP_Object_Cache(['prefix' => 'oom']);
            $a = $u->get('alloptions', 'options', true);
            $a['opt_1'] = 'new value';
            $a['big_new'] = str_repeat('b', 200000);
            $r = [$seeded, $u->set('alloptions', $a, 'options'), $u->get_stats()['store_up'], (new WP_Object_Cache(['prefix' => 'oom']))->get('alloptions', 'options'),
                  $u->set('small', 'fits'), (new WP_Object_Cache(['prefix' => 'oom']))->get('small'), $u->get('alloptions', 'options')['opt_1']];
            echo json_encode($r);
            PHP, ['ephpm.kv_backend' => 'memory', 'ephpm.kv_memory_limit' => '1M']);
        $this->assertSame(0, $status, $stderr);
        $this->assertSame([true, false, true, false, true, 'fits', 'new value'], json_decode($stdout, true));
        $this->assertStringStartsWith('ephpm object cache: set: ', $stderr);
        $this->assertStringNotContainsString('runtime cache only', $stderr);
    }

    /** A value serialize() refuses lives in the runtime cache only: false, and no old entry is left to be served. */
    public function testAValueTheStoreCannotSerializeStaysInTheRuntimeCache(): void
    {
        [$stdout, $stderr, $status] = $this->child(<<<'PHP'
            $a = new WP_Object_Cache(['prefix' => 'closure']);
            $closure = function () { return 1; };
            $r = [$a->set('k', 'old'), $a->set('k', $closure), ($a->get('k'))() === 1, (new WP_Object_Cache(['prefix' => 'closure']))->get('k'),
                  $a->add('new', $closure), $a->set_multiple(['m' => $closure, 'n' => 'fine']), (new WP_Object_Cache(['prefix' => 'closure']))->get_multiple(['m', 'n']),
                  $a->get_stats()['store_up']];
            echo json_encode($r);
            PHP, ['ephpm.kv_backend' => 'memory']);
        $this->assertSame(0, $status, $stderr);
        $this->assertSame([true, false, true, false, false, ['m' => false, 'n' => true], ['m' => false, 'n' => 'fine'], true], json_decode($stdout, true));
        $this->assertSame("ephpm object cache: set: Serialization of 'Closure' is not allowed\n", $stderr);
    }

    /**
     * A cached object whose class changed since it was stored (a plugin
     * update typed a property): unserialize() throws TypeError. That is a
     * miss, logged once, and the entry is removed; no page fatals.
     */
    public function testAnEntryThatCannotBeUnserializedIsAMissAndIsRemoved(): void
    {
        $log = tempnam(sys_get_temp_dir(), 'wplog');
        $previous = ini_set('error_log', $log);
        try {
            $cache = $this->request();
            $stale = 'O:13:"WpdropTyped42":1:{s:5:"limit";s:9:"unlimited";}'; // stored before the class typed $limit
            foreach (['one', 'two', 'three'] as $key) {
                ephpm_kv_set($cache->store_key($key, 'plugin'), $stale, 60);
            }
            $found = null;
            $this->assertFalse($cache->get('one', 'plugin', false, $found));
            $this->assertFalse($found);
            $this->assertNull(ephpm_kv_get($cache->store_key('one', 'plugin')), 'removed, so no later request trips on it');
            $this->assertSame(['two' => false, 'x' => false], $cache->get_multiple(['two', 'x'], 'plugin'));
            $this->assertNull(ephpm_kv_get($cache->store_key('two', 'plugin')));
            $this->assertFalse($cache->incr('three', 1, 'plugin'));
            $this->assertNull(ephpm_kv_get($cache->store_key('three', 'plugin')));
            $this->assertTrue($cache->get_stats()['store_up']);
            $this->assertTrue($cache->set('one', 'fresh', 'plugin'));
            $this->assertSame('fresh', $this->request()->get('one', 'plugin'));
            $lines = array_filter(explode("\n", (string) file_get_contents($log)));
            $this->assertCount(1, $lines, 'logged once per request');
            $this->assertStringContainsString('cannot be unserialized (TypeError', $lines[0]);
        } finally {
            ini_set('error_log', (string) $previous);
            unlink($log);
        }
    }

    /**
     * What serialize() refuses with an Error (a __serialize() that returns
     * no array, a __sleep() that throws Error), and resources (which it would
     * store as i:0;), stay in the request's runtime cache; the old entry is
     * removed and the store stays in use. A merged array holding one is
     * invalidated.
     */
    public function testValuesSerializeRefusesOrWouldMangleStayInTheRuntimeCache(): void
    {
        $log = tempnam(sys_get_temp_dir(), 'wplog');
        $previous = ini_set('error_log', $log);
        try {
            $cache = $this->request();
            $values = [
                'string from __serialize' => new class () { public function __serialize() { return 'not an array'; } },
                'Error from __sleep' => new class () { public function __sleep() { throw new Error('no'); } },
                'resource' => fopen('php://memory', 'r'),
                'resource in an array' => ['handle' => [fopen('php://memory', 'r')]],
            ];
            foreach ($values as $name => $value) {
                $this->assertTrue($cache->set($name, 'old'), $name);
                $this->assertFalse($cache->set($name, $value), $name);
                $this->assertNotFalse($cache->get($name), "$name: the request keeps it");
                $this->assertFalse($this->request()->get($name), "$name: no old entry, no i:0;");
                $this->assertFalse($cache->add("$name new", $value), $name);
                $this->assertSame([$name => false], $cache->set_multiple([$name => $value]), $name);
            }
            $this->assertIsResource($cache->get('resource'), 'the request keeps it');
            $this->seedAlloptions(['x' => '1']);
            $all = $cache->get('alloptions', 'options', true);
            $all['cb'] = new class () { public function __sleep() { throw new Error('no'); } };
            $this->assertFalse($cache->set('alloptions', $all, 'options'));
            $this->assertFalse($this->storedAlloptions(), 'invalidated: the next reader rebuilds it');
            $this->assertTrue($cache->get_stats()['store_up']);
        } finally {
            ini_set('error_log', (string) $previous);
            unlink($log);
        }
    }

    /**
     * A long process (WP-CLI, a worker) is not left without the store by
     * one failure: after wp_cache_flush_runtime(), or after the retry time,
     * it is tried again. Writes skipped while it was off may have left
     * stale entries, so its return advances the site generation.
     */
    public function testALongProcessGetsTheStoreBackAfterAFailure(): void
    {
        $log = tempnam(sys_get_temp_dir(), 'wplog');
        $previous = ini_set('error_log', $log);
        try {
            $worker = $this->request();
            $worker->set('post', 'old');
            WpSeam::at(null, 'before', 'get', WpSeam::count(null, 'get') + 1, 'fail');
            $this->assertFalse($worker->get('other', 'default', true));
            $this->assertFalse($worker->get_stats()['store_up']);
            $this->assertFalse($worker->set('post', 'new'), 'skipped: the store keeps the old value');
            $this->assertSame('old', $this->request()->get('post'));
            $this->assertTrue($worker->flush_runtime());
            $this->assertFalse($worker->get('post'), 'tried again, and the site generation advanced: the stale entry is gone');
            $this->assertTrue($worker->get_stats()['store_up']);
            $this->assertFalse($this->request()->get('post'), 'for every request');
            $this->assertTrue($worker->set('post', 'newer'));
            $this->assertSame('newer', $this->request()->get('post'));

            // Reads only, while off: nothing is flushed when the store returns; after the retry time, without flush_runtime().
            $reader = $this->request(['store_retry' => 1.0]);
            $reader->get('warm');
            WpSeam::at(null, 'before', 'get', WpSeam::count(null, 'get') + 1, 'fail');
            $failing = hrtime(true);               // before the failure turns the store off
            $this->assertFalse($reader->get('x', 'default', true));
            $post = $reader->get('post', 'default', true);
            if (hrtime(true) - $failing < 1e9) {
                $this->assertFalse($post, 'off: no store');
            } // else this host took the retry time's whole second: tried again (its pace is not asserted)
            usleep(1_050_000);
            $this->assertSame('newer', $reader->get('post', 'default', true), 'back, and nothing flushed');
            $lines = array_values(array_filter(explode("\n", (string) file_get_contents($log))));
            $this->assertStringContainsString('this site\'s entries were flushed', $lines[1] ?? '', implode("\n", $lines));
        } finally {
            ini_set('error_log', (string) $previous);
            unlink($log);
        }
    }

    // ------------------------------------------------ races of processes

    /**
     * Six processes released together each wp_cache_add() the same 200
     * keys, each in a request of its own: one winner per key, whose value
     * the store holds.
     */
    public function testAddHasOneWinnerPerKeyAcrossProcesses(): void
    {
        $this->skipUnlessShared();
        $outputs = ephpm_test_race(6, sprintf(
            'require_once %s; $c = new WP_Object_Cache(["prefix" => %s]); for ($k = 0; $k < 200; $k++) { if ($c->add("key$k", $i, "race")) { echo "$k $i\n"; } }',
            var_export(WPDROP_FILE, true), var_export($this->site, true)));
        $winners = [];
        foreach ($outputs as $output) {
            foreach (array_filter(explode("\n", $output)) as $line) {
                [$key, $winner] = explode(' ', $line);
                $winners[$key][] = (int) $winner;
            }
        }
        $reader = $this->request();
        for ($k = 0; $k < 200; $k++) {
            $this->assertCount(1, $winners[$k] ?? [], "key$k: winners " . json_encode($winners[$k] ?? []));
            $this->assertSame($winners[$k][0], $reader->get("key$k", 'race'));
        }
    }

    public function testIncrAndDecrLoseNoCountAcrossProcesses(): void
    {
        $this->skipUnlessShared();
        wp_cache_set('hits', 0, 'race');
        wp_cache_set('floor', 3, 'race');
        wp_cache_set('ratio', 0.5, 'race');
        ephpm_test_race(6, sprintf(
            'require_once %s; $c = new WP_Object_Cache(["prefix" => %s, "lock_wait" => 30.0]); for ($k = 0; $k < 100; $k++) { $c->incr("hits", 1, "race"); } for ($k = 0; $k < 20; $k++) { $c->decr("floor", 2, "race"); } for ($k = 0; $k < 20; $k++) { $c->incr("ratio", 1, "race"); }',
            var_export(WPDROP_FILE, true), var_export($this->site, true)));
        $reader = $this->request();
        $this->assertSame(600, $reader->get('hits', 'race'));
        $this->assertSame(0, $reader->get('floor', 'race'), '120 decrements of 2 from 3 end at 0');
        $this->assertSame(120.5, $reader->get('ratio', 'race'), 'a float counted under its lock');
    }

    /**
     * A decrement below 0 leaves its deficit in the store until its second
     * increment takes it back. Another decrement, a reader and an increment
     * in that window each count on the deficit: none takes it for a value
     * to clamp and write back (which lost the second decrement's take-back:
     * s16's clean run ended "six decrements of 2 from 3" at 2).
     */
    public function testADecrementsDeficitIsCountedOnNotWrittenOver(): void
    {
        wp_cache_set('floor', 1, 'race');
        $a = $this->request();
        $fiber = new Fiber(fn () => $a->decr('floor', 2, 'race'));
        WpSeam::at($fiber, 'after', 'incr_by', 1, 'pause'); // the store holds -1
        $fiber->start();
        $this->assertSame(0, $this->request()->decr('floor', 2, 'race'));
        $this->assertSame(0, $this->request()->get('floor', 'race'), 'a deficit reads as 0');
        $this->assertSame(4, $this->request()->incr('floor', 5, 'race'));
        $fiber->resume();
        $this->assertTrue($fiber->isTerminated());
        $this->assertSame(0, $fiber->getReturn());
        $this->assertSame(5, $this->request()->get('floor', 'race'), '1, -2 (to 0), -2 (to 0), +5');
    }

    /**
     * An increment of a value that is no counter is a read and a write:
     * two at once both count, the second waiting for the first's lock; one
     * whose lock was taken over while it held it is refused, says so, and
     * changes nothing.
     */
    public function testIncrementsOfAFloatWaitTheirTurnOrAreRefused(): void
    {
        wp_cache_set('f', 1.5);
        $a = $this->request(['lock_wait' => 0.0]);
        $fiber = new Fiber(fn () => $a->incr('f'));
        WpSeam::at($fiber, 'after', 'get', 2, 'pause'); // read under the lock
        $fiber->start();
        $this->assertSame(2.5, $this->request(['lock_wait' => 0.0])->incr('f'), 'took the lock over');
        $fiber->resume();
        $this->assertTrue($fiber->isTerminated());
        $this->assertFalse($fiber->getReturn(), 'its lock was taken over: not counted');
        $this->assertSame(2.5, $this->request()->get('f'));
        $this->assertSame(3.5, wp_cache_incr('f'));
        $this->assertSame(0, wp_cache_decr('f', 10), 'clamped: a counter from here on');
        $this->assertSame('0', ephpm_kv_get($this->request()->store_key('f', 'default')));
    }

    /** Six processes flush six groups at once: every flush holds, and an unflushed group keeps its entry. */
    public function testConcurrentFlushesOfGroupsAreNeverLost(): void
    {
        $this->skipUnlessShared();
        for ($g = 0; $g < 6; $g++) {
            wp_cache_set('k', $g, "g$g");
        }
        wp_cache_set('k', 'kept', 'keep');
        ephpm_test_race(6, sprintf(
            'require_once %s; $c = new WP_Object_Cache(["prefix" => %s, "lock_wait" => 30.0]); $c->get("warm"); $c->flush_group("g$i");',
            var_export(WPDROP_FILE, true), var_export($this->site, true)));
        $reader = $this->request();
        for ($g = 0; $g < 6; $g++) {
            $this->assertFalse($reader->get('k', "g$g"), "g$g");
        }
        $this->assertSame('kept', $reader->get('k', 'keep'));
    }

    /**
     * The alloptions race: in each of five rounds, six processes released
     * together each do what update_option()/add_option() do to the cache
     * for an option of their own (read alloptions with $force, change one
     * element, set the whole array). Merged, every update is in the cache.
     * WordPress's plain whole-array set loses updates; how many depends on
     * the machine (docs/wordpress.md), so it is reported, not asserted.
     */
    public function testEveryConcurrentOptionUpdateIsKeptInAlloptions(): void
    {
        $this->skipUnlessShared();
        $rounds = 5;
        $options = [];
        for ($o = 0; $o < 400; $o++) {
            $options["option_$o"] = str_repeat(chr(97 + $o % 26), 100);
        }
        foreach ([true, false] as $merge) {
            $this->site = 'wpt-' . bin2hex(random_bytes(6));
            $this->seedAlloptions($options, ['merge_options' => $merge]);
            $outputs = ephpm_test_race(6, sprintf(<<<'PHP'
                require_once %s;
                $c = new WP_Object_Cache(["prefix" => %s, "merge_options" => %s, "lock_wait" => 30.0]);
                $all = $c->get("alloptions", "options", true);
                if (!is_array($all)) { echo "miss\n"; } else { $all["opt_{$r}_{$i}"] = "value $r $i"; $c->set("alloptions", $all, "options"); }
                PHP, var_export(WPDROP_FILE, true), var_export($this->site, true), var_export($merge, true)), $rounds);
            $stored = $this->storedAlloptions(['merge_options' => $merge]);
            $this->assertIsArray($stored);
            $kept = count(array_filter(array_keys($stored), fn ($name) => str_starts_with((string) $name, 'opt_')));
            if ($merge) {
                $this->assertSame('', implode('', $outputs), 'no process found the entry missing');
                $this->assertSame(6 * $rounds, $kept);
                $this->assertCount(400 + 6 * $rounds, $stored);
            } else {
                $this->addToAssertionCount(1);
                fwrite(STDERR, sprintf("\n[alloptions race, %s] WordPress's whole-array set kept %d of %d updates\n",
                    ini_get('ephpm.kv_backend'), $kept, 6 * $rounds));
            }
        }
    }

    /**
     * Updates, cold reads (a miss, the database, an add) and, with $flush,
     * flushes race in six processes, five rounds, against a "database" of
     * six options kept in store keys of their own. Processes 0-2 each
     * update their own option (the database, then alloptions as
     * update_option() does); 3 and 4 drop the entry and load it as a cold
     * request (wp_load_alloptions(): a miss, the database, an add); 5 loads
     * it too, or flushes the site. Whatever the interleaving, alloptions
     * then holds exactly the database, or nothing.
     */
    private function raceAlloptionsAgainstTheDatabase(bool $flush): void
    {
        $this->skipUnlessShared();
        $db = 'wpdb|' . $this->site . '|';
        for ($o = 0; $o < 6; $o++) {
            ephpm_kv_set($db . "opt_$o", 'initial', 600);
        }
        ephpm_test_race(6, sprintf(<<<'PHP'
            require_once %s;
            $db = %s;
            $options = ["prefix" => %s, "lock_wait" => 30.0];
            $load = function (WP_Object_Cache $c, bool $force) use ($db) {
                $all = $c->get("alloptions", "options", $force);
                if (!is_array($all)) {
                    $all = [];
                    foreach (ephpm_kv_get_many(array_map(fn ($o) => $db . "opt_$o", range(0, 5))) as $key => $value) {
                        $all[substr($key, strlen($db))] = $value;
                    }
                    $c->add("alloptions", $all, "options");
                }
                return $all;
            };
            $c = new WP_Object_Cache($options);
            if ($i < 3) {
                $c->get("warm");
                ephpm_kv_set($db . "opt_$i", "round $r", 600);
                $all = $load($c, true);
                $all["opt_$i"] = "round $r";
                $c->set("alloptions", $all, "options");
            } elseif ($i < 5 || !%s) {
                if ($i < 5) { $c->delete("alloptions", "options"); }
                $load(new WP_Object_Cache($options), false);
            } else {
                $c->flush();
            }
            PHP, var_export(WPDROP_FILE, true), var_export($db, true), var_export($this->site, true), var_export($flush, true)), 5);
        $database = [];
        foreach (ephpm_kv_get_many(array_map(fn ($o) => $db . "opt_$o", range(0, 5))) as $key => $value) {
            $database[substr($key, strlen($db))] = $value;
        }
        $this->assertSame('round 4', $database['opt_0']);
        $stored = $this->storedAlloptions();
        if ($stored !== false) {
            ksort($stored);
            $this->assertSame($database, $stored, 'the cache never holds an option the database does not');
        }
        $this->addToAssertionCount(1);
    }

    public function testColdReadsAndUpdatesInProcessesLeaveAlloptionsEqualToTheDatabase(): void
    {
        $this->raceAlloptionsAgainstTheDatabase(false);
    }

    public function testAFlushInFlightAmongUpdatesLeavesAlloptionsEqualToTheDatabase(): void
    {
        $this->raceAlloptionsAgainstTheDatabase(true);
    }
}
