<?php

declare(strict_types=1);

use Ephpm\Laravel\EphpmLock;
use Ephpm\Laravel\EphpmStore;
use Illuminate\Cache\Repository;
use Illuminate\Contracts\Cache\LockTimeoutException;
use PHPUnit\Framework\TestCase;

final class LaravelTest extends TestCase
{
    private function name(): string
    {
        return 'lv:' . bin2hex(random_bytes(6));
    }

    public function testLockGetReleaseOwner(): void
    {
        $store = new EphpmStore();
        $name = $this->name();
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
        $name = $this->name();
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
        $name = $this->name();
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
        $name = $this->name();
        $store->lock($name, 1)->get();             // expires in 1 s
        $start = microtime(true);
        $this->assertTrue($store->lock($name, 10)->block(3));
        $this->assertLessThan(1.5, microtime(true) - $start, 'got it when the TTL ran out');
        $this->expectException(LockTimeoutException::class);
        $store->lock($name, 10)->block(0.2);
    }

    public function testRepository(): void
    {
        $cache = new Repository(new EphpmStore('app:'));
        $key = $this->name();
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
}
