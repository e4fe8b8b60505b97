<?php

declare(strict_types=1);

use Ephpm\Laravel\EphpmLock;
use Ephpm\Laravel\EphpmRepository;
use Ephpm\Laravel\EphpmStore;
use Illuminate\Cache\Repository;
use Illuminate\Contracts\Cache\LockTimeoutException;
use PHPUnit\Framework\TestCase;

final class LaravelTest extends TestCase
{
    private function lockName(): string
    {
        return 'lv:' . bin2hex(random_bytes(6));
    }

    private function skipUnlessShared(): void
    {
        if (ini_get('ephpm.kv_backend') === 'memory') {
            $this->markTestSkipped('processes share keys only through a shared backend (a segment, Redis)');
        }
    }

    /** Waits until the store no longer has $key (its TTL ran out), at most 60 s: a hang catch, not a speed bound. */
    private function waitUntilGone(string $key): void
    {
        $deadline = microtime(true) + 60;
        while (ephpm_kv_exists($key)) {
            if (microtime(true) > $deadline) {
                $this->fail("$key still there 60 s later");
            }
            usleep(20_000);
        }
    }

    /**
     * The lines each process of ephpm_test_race() printed, "KEY WINNER",
     * gathered as KEY => list of winners.
     *
     * @param list<string> $outputs
     * @return array<string, list<string>>
     */
    private function winners(array $outputs): array
    {
        $winners = [];
        foreach ($outputs as $output) {
            foreach (explode("\n", trim($output)) as $line) {
                if ($line !== '') {
                    [$key, $winner] = explode(' ', $line, 2);
                    $winners[$key][] = $winner;
                }
            }
        }

        return $winners;
    }

    /** Keys of 0 to $n - 1 that $winners gives fewer or more than one winner. */
    private function notWonOnce(array $winners, int $n): array
    {
        $wrong = [];
        for ($k = 0; $k < $n; $k++) {
            if (\count($winners[$k] ?? []) !== 1) {
                $wrong[$k] = $winners[$k] ?? [];
            }
        }

        return $wrong;
    }

    /**
     * Six processes released together pull() each of 200 keys through
     * EphpmRepository: each value goes to one of them, the others get the
     * default. (Laravel's pull() reads then forgets: every caller that read
     * before the first forget gets the value.)
     */
    public function testPullGivesAValueToOneCallerAcrossProcesses(): void
    {
        $this->skipUnlessShared();
        $key = $this->lockName();
        $cache = new EphpmRepository(new EphpmStore('app:'));
        for ($k = 0; $k < 200; $k++) {
            $cache->put("$key:$k", "value $k", 60);
        }
        $winners = $this->winners(ephpm_test_race(6, sprintf(
            '$cache ??= new Ephpm\Laravel\EphpmRepository(new Ephpm\Laravel\EphpmStore("app:"));'
            . ' $v = $cache->pull(%s . $r, "none"); if ($v !== "none") { echo $r, " ", $v, "\n"; }',
            var_export($key . ':', true)), 200));
        $this->assertSame([], $this->notWonOnce($winners, 200), 'values not pulled exactly once');
        for ($k = 0; $k < 200; $k++) {
            $this->assertSame("value $k", $winners[$k][0]);
            $this->assertFalse($cache->has("$key:$k"));
        }
    }

    public function testPull(): void
    {
        $cache = new EphpmRepository(new EphpmStore('app:'));
        $key = $this->lockName();
        $cache->put($key, ['v' => 1.5], 60);
        $this->assertSame(['v' => 1.5], $cache->pull($key));
        $this->assertFalse($cache->has($key));
        $this->assertSame('default', $cache->pull($key, 'default'));
        $this->assertSame('computed', $cache->pull($key, fn () => 'computed'));
        $cache->forever("$key:f", false);
        $this->assertFalse($cache->pull("$key:f", 'default'));
        $this->assertFalse(ephpm_kv_exists("app:$key:f"));
    }

    /** add() as Laravel's Redis store's: only onto no live entry, one holding null counts. */
    public function testAdd(): void
    {
        $cache = new Repository(new EphpmStore('app:'));
        $key = $this->lockName();
        $this->assertTrue($cache->add($key, 'first', 60));
        $this->assertFalse($cache->add($key, 'second', 60));
        $this->assertSame('first', $cache->get($key));
        $this->assertGreaterThan(50, ephpm_kv_ttl('app:' . $key));
        // Laravel's testRedisCacheAddNull.
        $cache->forever("$key:null", null);
        $this->assertFalse($cache->add("$key:null", 'v', 60), 'a null stored is there');
        $this->assertNull($cache->get("$key:null"));
        $cache->forever("$key:false", false);
        $this->assertFalse($cache->add("$key:false", 'v', 60));
        $this->assertFalse($cache->get("$key:false", 'default'));
        // What RateLimiter does: add 0, then count on it.
        $this->assertTrue($cache->add("$key:n", 0, 60));
        $this->assertSame(1, $cache->increment("$key:n"));
        $this->assertFalse($cache->add("$key:n", 0, 60));
        $this->assertSame(1, $cache->get("$key:n"));
        // An expired entry is no entry.
        $cache->put("$key:e", 'old', 1);
        $this->waitUntilGone("app:$key:e");
        $this->assertTrue($cache->add("$key:e", 'new', 60));
        $this->assertSame('new', $cache->get("$key:e"));
        // Laravel's Repository adds nothing for no time.
        $this->assertFalse($cache->add("$key:z", 'v', 0));
        $this->assertFalse($cache->has("$key:z"));
    }

    /** EphpmRepository's add() with no TTL adds forever, in the same one step. */
    public function testAddForever(): void
    {
        $cache = new EphpmRepository(new EphpmStore('app:'));
        $key = $this->lockName();
        $this->assertTrue($cache->add($key, 'v'));
        $this->assertSame(-1, ephpm_kv_ttl('app:' . $key), 'forever');
        $this->assertFalse($cache->add($key, 'w'));
        $this->assertSame('v', $cache->get($key));
        $cache->forever("$key:null", null);
        $this->assertFalse($cache->add("$key:null", 'v'), 'a null stored is there');
    }

    /**
     * Laravel's Cache::add() on each of 200 fresh keys by six processes
     * released together: one winner per key, whose value the key keeps.
     * (Without the store's add(), Laravel's Repository reads then writes,
     * and two processes both "add" a key.)
     */
    public function testAddIsAtomicAcrossProcesses(): void
    {
        $this->skipUnlessShared();
        $key = $this->lockName();
        $winners = $this->winners(ephpm_test_race(6, sprintf(
            '$cache ??= new Illuminate\Cache\Repository(new Ephpm\Laravel\EphpmStore("app:"));'
            . ' if ($cache->add(%s . $r, getmypid(), 10)) { echo $r, " ", getmypid(), "\n"; }',
            var_export($key . ':', true)), 200));
        $this->assertSame([], $this->notWonOnce($winners, 200), 'keys not added exactly once');
        $cache = new Repository(new EphpmStore('app:'));
        for ($k = 0; $k < 200; $k++) {
            $this->assertSame((int) $winners[$k][0], $cache->get("$key:$k"), "key $k holds its winner's value");
        }
    }

    /** increment() and decrement() start a missing or expired key at 0, with no TTL, as on Laravel's Redis store. */
    public function testIncrementAndDecrementOnMissingAndExpiredKeys(): void
    {
        $cache = new Repository(new EphpmStore('app:'));
        $key = $this->lockName();
        $this->assertSame(1, $cache->increment("$key:a"));
        $this->assertSame(4, $cache->increment("$key:a", 3));
        $this->assertSame(-2, $cache->decrement("$key:b", 2));
        $this->assertSame(4, $cache->get("$key:a"));
        $this->assertSame(-1, ephpm_kv_ttl("app:$key:a"), 'no TTL');
        $cache->put("$key:e", 10, 1);
        $cache->put("$key:f", 10, 1);
        $this->waitUntilGone("app:$key:e");
        $this->waitUntilGone("app:$key:f");
        $this->assertSame(1, $cache->increment("$key:e"), 'an expired counter starts again at 0');
        $this->assertSame(-1, $cache->decrement("$key:f"));
        $this->assertSame(-1, ephpm_kv_ttl("app:$key:e"), 'without the old TTL');
        $this->assertSame(1, $cache->get("$key:e"));
    }

    /** Six processes count on one missing key at once: no count is lost. */
    public function testIncrementIsAtomicAcrossProcesses(): void
    {
        $this->skipUnlessShared();
        $key = $this->lockName();
        ephpm_test_race(6, sprintf(
            '$cache = new Illuminate\Cache\Repository(new Ephpm\Laravel\EphpmStore("app:"));'
            . ' for ($n = 0; $n < 100; $n++) { $cache->increment(%1$s, 3); $cache->decrement(%1$s); }',
            var_export($key, true)));
        $this->assertSame(1200, (new Repository(new EphpmStore('app:')))->get($key));
    }

    /** null and false are values: Laravel reads a null as a miss, but it is stored (and add() sees it). */
    public function testNullAndFalseValues(): void
    {
        $store = new EphpmStore('app:');
        $cache = new Repository($store);
        $key = $this->lockName();
        $cache->put("$key:n", null, 60);
        $this->assertSame('default', $cache->get("$key:n", 'default'));
        $this->assertFalse($cache->has("$key:n"));
        $this->assertTrue(ephpm_kv_exists("app:$key:n"), 'stored');
        $cache->put("$key:f", false, 60);
        $this->assertFalse($cache->get("$key:f", 'default'));
        $this->assertTrue($cache->has("$key:f"));
        $this->assertTrue($store->putMany(["$key:mn" => null, "$key:mf" => false, "$key:m0" => 0, "$key:ms" => ''], 60));
        $this->assertSame(["$key:mn" => null, "$key:mf" => false, "$key:m0" => 0, "$key:ms" => '', "$key:none" => null],
            $store->many(["$key:mn", "$key:mf", "$key:m0", "$key:ms", "$key:none"]));
        $this->assertSame(["$key:mf" => false, "$key:mn" => 'default'], $cache->many(["$key:mf", "$key:mn" => 'default']));
    }

    /** forever() stores with no TTL, and clears the TTL of what it replaces. */
    public function testForever(): void
    {
        $cache = new Repository(new EphpmStore('app:'));
        $key = $this->lockName();
        $cache->put($key, 'short', 60);
        $this->assertTrue($cache->forever($key, ['long']));
        $this->assertSame(-1, ephpm_kv_ttl('app:' . $key));
        $this->assertSame(['long'], $cache->get($key));
        $cache->forever("$key:n", 3);
        $this->assertSame(4, $cache->increment("$key:n"));
        $this->assertSame(-1, ephpm_kv_ttl("app:$key:n"));
    }

    /** Six processes released together try each of 200 locks: one holder each. */
    public function testLockGetIsExclusiveAcrossProcesses(): void
    {
        $this->skipUnlessShared();
        $name = $this->lockName();
        $winners = $this->winners(ephpm_test_race(6, sprintf(
            '$store ??= new Ephpm\Laravel\EphpmStore("app:");'
            . ' $lock = $store->lock(%s . $r, 10); if ($lock->get()) { echo $r, " ", $lock->owner(), "\n"; }',
            var_export($name . ':', true)), 200));
        $this->assertSame([], $this->notWonOnce($winners, 200), 'locks not held exactly once');
        $store = new EphpmStore('app:');
        for ($k = 0; $k < 200; $k++) {
            $this->assertTrue($store->restoreLock("$name:$k", $winners[$k][0])->release(), "lock $k released by its owner");
        }
    }

    /**
     * Six processes each run a read-then-write of one counter 20 times
     * under lock()->block(): no update is lost, so no two ran it at once,
     * and every release let the next waiter in. (The hold's 300 s and the
     * wait's 600 s are hang catches, not speed bounds.)
     */
    public function testBlockIsMutualExclusionAcrossProcesses(): void
    {
        $this->skipUnlessShared();
        $name = $this->lockName();
        ephpm_test_race(6, sprintf(
            '$store = new Ephpm\Laravel\EphpmStore("app:");'
            . ' for ($r = 0; $r < 20; $r++) { $store->lock(%1$s, 300)->block(600, function () {'
            . ' $n = (int) ephpm_kv_get(%2$s); ephpm_kv_set(%2$s, (string) ($n + 1)); }); }',
            var_export($name, true), var_export($name . ':count', true)));
        $this->assertSame('120', ephpm_kv_get($name . ':count'));
        $this->assertNull(ephpm_kv_get('app:' . $name), 'every hold released');
    }

    /** A lock restored in another process (a queued job) by its owner releases it; another owner cannot. */
    public function testRestoreLockInAnotherProcess(): void
    {
        $this->skipUnlessShared();
        $store = new EphpmStore('app:');
        $name = $this->lockName();
        $lock = $store->lock($name, 30);
        $this->assertTrue($lock->get());
        [$output] = ephpm_test_race(1, sprintf(
            '$store = new Ephpm\Laravel\EphpmStore("app:");'
            . ' var_export([$store->restoreLock(%1$s, "not the owner")->release(), ephpm_kv_get("app:" . %1$s),'
            . ' $store->restoreLock(%1$s, %2$s)->release()]);',
            var_export($name, true), var_export($lock->owner(), true)));
        $this->assertSame(var_export([false, $lock->owner(), true], true), $output);
        $this->assertNull(ephpm_kv_get('app:' . $name), 'released by the other process');
        $this->assertTrue($store->lock($name, 30)->get());
    }

    /**
     * A force release frees a lock held for 600 s for the process waiting
     * in block() for up to 60 s.
     */
    public function testForceReleaseLetsAWaiterIn(): void
    {
        $this->skipUnlessShared();
        $store = new EphpmStore('app:');
        $name = $this->lockName();
        $this->assertTrue($store->lock($name, 600)->get());
        [$proc, $pipes] = ephpm_test_spawn(sprintf(
            'require %s; $lock = (new Ephpm\Laravel\EphpmStore("app:"))->lock(%s, 10); echo "waiting\n";'
            . ' var_export($lock->block(60)); echo " ", $lock->owner() === ephpm_kv_get("app:" . %2$s) ? "owner" : "not owner";',
            var_export(__DIR__ . '/bootstrap.php', true), var_export($name, true)));
        $this->assertSame("waiting\n", fgets($pipes[1]));
        // Whether the child waits already or not yet, it gets the lock.
        $store->lock($name)->forceRelease();
        $output = stream_get_contents($pipes[1]);
        $errors = stream_get_contents($pipes[2]);
        proc_close($proc);
        $this->assertSame('true owner', $output, $errors);
    }

    /** block() with a callback releases the lock when the callback throws. */
    public function testBlockReleasesWhenTheCallbackThrows(): void
    {
        $store = new EphpmStore('app:');
        $name = $this->lockName();
        try {
            $store->lock($name, 10)->block(1, fn () => throw new RuntimeException('failed'));
            $this->fail('no exception');
        } catch (RuntimeException $e) {
            $this->assertSame('failed', $e->getMessage());
        }
        $this->assertNull(ephpm_kv_get('app:' . $name));
        $this->assertTrue($store->lock($name, 10)->get());
    }

    /** $got is the float $want, bit for bit (so -0.0 is not 0.0, and 1.0 not 1). */
    private function assertSameFloat(float $want, mixed $got, string $what): void
    {
        $this->assertIsFloat($got, $what);
        if (is_nan($want)) {
            $this->assertNan($got, $what);
        } else {
            $this->assertSame(bin2hex(pack('E', $want)), bin2hex(pack('E', $got)), "$what: " . var_export($got, true));
        }
    }

    /** Floats come back identical through every way in and out of the store. */
    public function testFloatsRoundTripExactly(): void
    {
        $floats = [0.1 + 0.2, M_PI, 123456789.12345678, 1.0, -0.0, 0.0, -1.5, 1e300, 5e-324, PHP_FLOAT_EPSILON,
            9007199254740993.0, (float) PHP_INT_MAX, INF, -INF, NAN];
        $store = new EphpmStore('app:');
        $plain = new Repository($store);
        $cache = new EphpmRepository($store);
        $key = $this->lockName();
        foreach ($floats as $n => $f) {
            $what = "float $n (" . var_export($f, true) . ')';
            $plain->put("$key:put:$n", $f, 60);
            $this->assertSameFloat($f, $plain->get("$key:put:$n"), "$what, put()");
            $plain->forever("$key:forever:$n", $f);
            $this->assertSameFloat($f, $plain->get("$key:forever:$n"), "$what, forever()");
            $this->assertTrue($plain->add("$key:add:$n", $f, 60));
            $this->assertSameFloat($f, $plain->get("$key:add:$n"), "$what, add()");
            $this->assertSameFloat($f, $cache->remember("$key:remember:$n", 60, fn () => $f), "$what, remember() computing");
            $this->assertSameFloat($f, $cache->remember("$key:remember:$n", 60, fn () => 'computed again'), "$what, remember() stored");
            $this->assertSameFloat($f, $cache->rememberForever("$key:rf:$n", fn () => $f), "$what, rememberForever() computing");
            $this->assertSameFloat($f, $cache->rememberForever("$key:rf:$n", fn () => 'computed again'), "$what, rememberForever() stored");
            $plain->remember("$key:plain:$n", 60, fn () => $f);
            $this->assertSameFloat($f, $plain->remember("$key:plain:$n", 60, fn () => 'computed again'), "$what, Laravel's remember()");
        }
        $many = [];
        foreach ($floats as $n => $f) {
            $many["$key:many:$n"] = $f;
        }
        $this->assertTrue($plain->putMany($many, 60));
        foreach ($plain->many(array_keys($many)) as $k => $got) {
            $this->assertSameFloat($many[$k], $got, "$k, putMany()/many()");
        }
    }

    /** Integers stay integers, and increment() and decrement() count on them whichever way they were stored. */
    public function testIntegersStayCountable(): void
    {
        $cache = new EphpmRepository(new EphpmStore('app:'));
        $key = $this->lockName();
        foreach ([0, 7, -12, PHP_INT_MAX, PHP_INT_MIN] as $n => $i) {
            $cache->put("$key:$n", $i, 60);
            $this->assertSame($i, $cache->get("$key:$n"));
        }
        $cache->put("$key:put", 5, 60);
        $cache->forever("$key:forever", 5);
        $cache->add("$key:add", 5, 60);
        $cache->putMany(["$key:many" => 5], 60);
        $cache->remember("$key:remember", 60, fn () => 5);
        $cache->rememberForever("$key:rf", fn () => 5);
        foreach (['put', 'forever', 'add', 'many', 'remember', 'rf'] as $how) {
            $this->assertSame(8, $cache->increment("$key:$how", 3), $how);
            $this->assertSame(6, $cache->decrement("$key:$how", 2), $how);
            $this->assertSame(6, $cache->get("$key:$how"), $how);
        }
        $cache->put("$key:s", '5', 60);
        $this->assertSame('5', $cache->get("$key:s"), 'a numeric string stays a string');
    }

    /** A held lock's key read through the cache is its owner, as on Laravel's Redis store; a free one's null. */
    public function testReadingALocksKeyThroughTheCache(): void
    {
        $cache = new Repository(new EphpmStore('app:'));
        $name = $this->lockName();
        $lock = $cache->lock($name, 10);
        $this->assertNull($cache->get($name));
        $this->assertTrue($lock->get());
        $this->assertSame($lock->owner(), $cache->get($name));
        $this->assertSame([$name => $lock->owner()], $cache->many([$name]));
        $this->assertTrue($cache->has($name));
        $custom = $cache->lock($name . ':custom', 10, 'owner with spaces; and: colons');
        $this->assertTrue($custom->block(1));
        $this->assertSame('owner with spaces; and: colons', $cache->get($name . ':custom'));
        $this->assertTrue($lock->release());
        $this->assertNull($cache->get($name));
    }

    /**
     * Laravel's testConcurrentRedisLocksAreReleasedSafely: a holder whose
     * lock expired and was taken by another releases nothing, and the key
     * reads as held.
     */
    public function testConcurrentLocksAreReleasedSafely(): void
    {
        $cache = new Repository(new EphpmStore('app:'));
        $name = $this->lockName();
        $cache->lock($name)->forceRelease();
        $first = $cache->lock($name, 1);
        $this->assertTrue($first->acquire());
        $this->waitUntilGone('app:' . $name);
        $second = $cache->lock($name, 10);
        $this->assertTrue($second->acquire());
        $this->assertFalse($first->release());
        $this->assertNotNull($cache->get($name));
        $this->assertSame($second->owner(), $cache->get($name));
    }

    public function testLockGetReleaseOwner(): void
    {
        $store = new EphpmStore();
        $name = $this->lockName();
        $lock = $store->lock($name, 10);
        $this->assertInstanceOf(EphpmLock::class, $lock);
        $this->assertTrue($lock->get());
        $this->assertFalse($store->lock($name, 10)->get());
        $this->assertSame($lock->owner(), ephpm_kv_get($name), 'the owner is the stored token');
        $this->assertTrue($lock->release());
        $this->assertFalse($lock->release(), 'released already');
        $this->assertSame('done', $store->lock($name, 10)->get(fn () => 'done'));
        $this->assertNull(ephpm_kv_get($name), 'get() with a callback releases');
    }

    public function testStaleReleaseCannotRemoveTheNewHoldersLock(): void
    {
        $store = new EphpmStore();
        $name = $this->lockName();
        $a = $store->lock($name, 1);
        $this->assertTrue($a->get());
        usleep(1_100_000);
        $b = $store->lock($name, 30);
        $this->assertTrue($b->get());
        $this->assertFalse($a->release(), 'A no longer holds it');
        $this->assertFalse($store->lock($name, 30)->get(), 'B still does');
        $this->assertSame($b->owner(), ephpm_kv_get($name));
    }

    public function testRestoreLockAndForceRelease(): void
    {
        $store = new EphpmStore();
        $name = $this->lockName();
        $lock = $store->lock($name, 10);
        $lock->get();
        $restored = $store->restoreLock($name, $lock->owner());
        $this->assertSame($lock->owner(), $restored->owner());
        $this->assertTrue($restored->release(), 'the restored lock releases with the same owner');
        $store->lock($name, 10)->get();
        $store->lock($name)->forceRelease();
        $this->assertNull(ephpm_kv_get($name));
    }

    public function testBlockWaitsAndTimesOut(): void
    {
        $store = new EphpmStore();
        $name = $this->lockName();
        $start = microtime(true);                  // before the TTL starts
        $store->lock($name, 1)->get();             // expires in 1 s
        $this->assertTrue($store->lock($name, 600)->block(300));   // 300 s: a hang catch
        $this->assertGreaterThan(0.9, microtime(true) - $start, 'got it when the TTL ran out, not before');
        $this->expectException(LockTimeoutException::class);
        $store->lock($name, 10)->block(0.2);
    }

    public function testBlockWithAnOwnerLongerThanALockTokenStillLocks(): void
    {
        $store = new EphpmStore();
        $name = $this->lockName();
        $owner = str_repeat('o', 300);             // beyond ephpm_kv_lock's 255 bytes
        $this->assertTrue($store->lock($name, 10, $owner)->block(1));
        $this->assertSame($owner, ephpm_kv_get($name));
        $this->assertTrue($store->restoreLock($name, $owner)->release());
    }

    public function testTouchRefreshAndIsLocked(): void
    {
        $store = new EphpmStore();
        $name = $this->lockName();
        $this->assertTrue($store->put($name . ':v', 'x', 5));
        $this->assertTrue($store->touch($name . ':v', 100));
        $this->assertGreaterThan(50, ephpm_kv_ttl($name . ':v'));
        $this->assertFalse($store->touch($name . ':none', 100), 'nothing to touch');

        $lock = $store->lock($name, 30);           // held throughout, however slow the host
        // isLocked() (Laravel 12) reads getCurrentOwner(), null when free.
        $locked = fn () => method_exists($lock, 'isLocked') ? $lock->isLocked() : ephpm_kv_exists($name);
        $this->assertFalse($locked(), 'a free lock is not locked');
        $this->assertTrue($lock->get());
        $this->assertTrue($locked());
        $this->assertTrue($lock->refresh(100));
        $this->assertGreaterThan(50, ephpm_kv_ttl($name));
        $this->assertTrue($lock->refresh(), 'its own TTL again');
        $this->assertLessThanOrEqual(30, ephpm_kv_ttl($name));
        $other = $store->lock($name, 5);
        $this->assertFalse($other->refresh(100), 'another owner cannot refresh it');
        $lock->release();
        $this->assertFalse($lock->refresh(), 'a released lock is not refreshed');
        $this->assertFalse($locked());
    }

    public function testFlushLocksRefusesAsLaravelsOwnStores(): void
    {
        $store = new EphpmStore();
        $this->assertFalse($store->hasSeparateLockStore());
        $this->expectException(RuntimeException::class);
        $store->flushLocks();
    }

    public function testFunnelAndFlexible(): void
    {
        $cache = new Repository(new EphpmStore('app:'));
        if (!method_exists($cache, 'funnel') || !method_exists($cache, 'flexible')) {
            $this->markTestSkipped('Cache::funnel() and Cache::flexible() came with Laravel 11 and 12');
        }
        $key = $this->lockName();
        $ran = $cache->funnel($key)->limit(2)->releaseAfter(10)->block(1)->then(fn () => 'in', fn () => 'out');
        $this->assertSame('in', $ran);
        $this->assertSame('fresh', $cache->flexible($key . ':f', [5, 10], fn () => 'fresh'));
        $this->assertSame('fresh', $cache->flexible($key . ':f', [5, 10], fn () => 'again'), 'served from the cache');
    }

    public function testFlexibleFillsAColdKeyOnce(): void
    {
        if (!method_exists(Repository::class, 'flexible')) {
            $this->markTestSkipped('Cache::flexible() came with Laravel 11');
        }
        if (ini_get('ephpm.kv_backend') === 'memory') {
            $this->markTestSkipped('processes share a cold key only through a shared backend');
        }
        // 8 processes at a barrier (each blocks reading its stdin until all
        // are ready) call flexible() on one cold key; the callback counts
        // its runs and takes 300 ms, so that every other caller arrives
        // while it runs. The value is fresh for 300 s, which no host's pace
        // outlasts before the last reading below (a value gone stale or
        // expired would be computed again).
        $key = $this->lockName();
        $runs = $key . ':runs';
        $code = sprintf(
            'require %s; $c = new Ephpm\Laravel\EphpmRepository(new Ephpm\Laravel\EphpmStore("app:")); echo "ready\n"; fgets(STDIN);'
            . ' echo $c->flexible(%s, [300, 600], function () { ephpm_kv_incr(%s); usleep(300000); return "fresh"; }), "\n";',
            var_export(__DIR__ . '/bootstrap.php', true), var_export($key, true), var_export($runs, true));
        $procs = [];
        for ($i = 0; $i < 8; $i++) {
            $cmd = [PHP_BINARY, '-n', '-d', 'display_errors=stderr', '-d', 'extension=' . getenv('EPHPM_SO'),
                '-d', 'ephpm.kv_backend=' . ini_get('ephpm.kv_backend'), '-r', $code];
            $proc = proc_open($cmd, [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
            $procs[] = [$proc, $pipes];
        }
        // A child's stderr is read only once its stdin is closed, so that a
        // failing child ends instead of waiting for the barrier forever.
        $lines = static function (string $want) use (&$procs): ?string {
            foreach ($procs as [, $pipes]) {
                $line = fgets($pipes[1]);
                if ($line !== $want) {
                    foreach ($procs as [, $p]) {
                        fclose($p[0]);
                    }
                    return var_export($line, true) . ' instead of ' . var_export($want, true) . ': ' . stream_get_contents($pipes[2]);
                }
            }
            return null;
        };
        $this->assertNull($lines("ready\n"));
        foreach ($procs as [, $pipes]) {
            fwrite($pipes[0], "go\n");
        }
        $this->assertNull($lines("fresh\n"));
        foreach ($procs as [$proc]) {
            proc_close($proc);
        }
        $this->assertSame('1', ephpm_kv_get($runs), 'the callback ran once among 8 processes');
        $cache = new EphpmRepository(new EphpmStore('app:'));
        $this->assertSame('fresh', $cache->flexible($key, [300, 600], fn () => 'again'), 'then served from the cache');
        $this->assertNotNull($cache->get('illuminate:cache:flexible:created:' . $key), 'with its creation time');
    }

    public function testAWarmFlexibleReadsTheStoreOnce(): void
    {
        if (!method_exists(Repository::class, 'flexible')) {
            $this->markTestSkipped('Cache::flexible() came with Laravel 11');
        }
        $store = new class ('app:') extends EphpmStore {
            public int $reads = 0;

            public function many(array $keys)
            {
                $this->reads++;

                return parent::many($keys);
            }
        };
        $cache = new EphpmRepository($store);
        $key = $this->lockName();
        $this->assertSame('fresh', $cache->flexible($key, [5, 10], fn () => 'fresh'));
        $store->reads = 0;
        $this->assertSame('fresh', $cache->flexible($key, [5, 10], fn () => 'again'));
        $this->assertSame(1, $store->reads, 'one read of the value and its creation time');
        $this->assertSame('fresh', $cache->flexible($key, [5, 10], fn () => 'again'));
        $this->assertSame(2, $store->reads, 'and one more for the next call: nothing kept between calls');
    }

    public function testRepository(): void
    {
        $cache = new Repository(new EphpmStore('app:'));
        $key = $this->lockName();
        $this->assertNull($cache->get($key));
        $cache->put($key, ['a' => 1], 60);
        $this->assertSame(['a' => 1], $cache->get($key));
        $this->assertSame('computed', $cache->remember($key . ':r', 60, fn () => 'computed'));
        $this->assertSame('computed', $cache->remember($key . ':r', 60, fn () => 'again'));
        $cache->put($key . ':n', 5, 60);
        $this->assertSame(8, $cache->increment($key . ':n', 3));
        $this->assertSame(6, $cache->decrement($key . ':n', 2));
        $cache->forever($key . ':f', false);
        $this->assertFalse($cache->get($key . ':f', 'default'), 'false survives');
        $this->assertTrue($cache->forget($key));
        $this->assertNull($cache->get($key));
        $this->assertInstanceOf(EphpmLock::class, $cache->lock($key, 5));
    }

    public function testManyAndPutManyInOneBatch(): void
    {
        $store = new EphpmStore('app:');
        $key = $this->lockName();
        $this->assertTrue($store->putMany([$key . ':a' => ['x'], $key . ':n' => 7, $key . ':f' => false], 60));
        $this->assertSame([$key . ':a' => ['x'], $key . ':n' => 7, $key . ':f' => false, $key . ':none' => null],
            $store->many([$key . ':a', $key . ':n', $key . ':f', $key . ':none']));
        $this->assertSame(9, $store->increment($key . ':n', 2), 'numbers stay numbers');
        $this->assertGreaterThan(50, ephpm_kv_ttl('app:' . $key . ':a'));
        $cache = new Repository($store);
        $this->assertSame([$key . ':a' => ['x'], 'other' => 'default'], $cache->many([$key . ':a', 'other' => 'default']));
    }

    public function testRepositoryRememberIsSingleFlight(): void
    {
        $cache = new EphpmRepository(new EphpmStore('app:'));
        $key = $this->lockName();
        $this->assertSame(['v' => 1], $cache->remember($key, 60, fn () => ['v' => 1]));
        $this->assertSame(['v' => 1], $cache->remember($key, 60, fn () => ['v' => 2]), 'served from the cache');
        $this->assertGreaterThan(50, ephpm_kv_ttl('app:' . $key));
        $this->assertFalse($cache->rememberForever($key . ':f', fn () => false));
        $this->assertSame(-1, ephpm_kv_ttl('app:' . $key . ':f'), 'forever');
        $this->assertFalse($cache->rememberForever($key . ':f', fn () => true), 'false is a value, not a miss');

        // Another caller is filling the key: remember() waits for its lock
        // (here it expires after 1 s) instead of computing at once. Timed
        // from before the lock's TTL starts: not before it ran out.
        $start = microtime(true);
        ephpm_kv_setnx('remember_lock:app:' . $key . ':w', 'another caller', 1);
        $this->assertSame('mine', $cache->remember($key . ':w', 60, fn () => 'mine'));
        $this->assertGreaterThan(0.9, microtime(true) - $start, 'it waited for the fill lock');

        // An exception reaches the caller and leaves no lock behind.
        try {
            $cache->remember($key . ':e', 60, fn () => throw new RuntimeException('no value'));
            $this->fail('no exception');
        } catch (RuntimeException $e) {
            $this->assertSame('no value', $e->getMessage());
        }
        $this->assertFalse(ephpm_kv_exists('remember_lock:app:' . $key . ':e'));
        $this->assertSame('plain', (new Repository(new EphpmStore('app:')))->remember($key . ':p', 60, fn () => 'plain'));
    }
}
