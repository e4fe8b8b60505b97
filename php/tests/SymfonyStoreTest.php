<?php

declare(strict_types=1);

use Ephpm\Symfony\EphpmStore;
use PHPUnit\Framework\TestCase;
use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Exception\LockExpiredException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\LockFactory;

/** The scenarios Symfony's own store tests check, against EphpmStore. */
final class SymfonyStoreTest extends TestCase
{
    private function key(): Key
    {
        return new Key('sf:' . bin2hex(random_bytes(6)));
    }

    public function testSaveExistsDelete(): void
    {
        $store = new EphpmStore();
        $key = $this->key();
        $this->assertFalse($store->exists($key));
        $store->save($key);
        $this->assertTrue($store->exists($key));
        $store->save($key);                       // saving again is a refresh
        $this->assertTrue($store->exists($key));
        $store->delete($key);
        $this->assertFalse($store->exists($key));
    }

    public function testConflictingKeys(): void
    {
        $store = new EphpmStore();
        $resource = 'sf:' . bin2hex(random_bytes(6));
        $a = new Key($resource);
        $b = new Key($resource);
        $store->save($a);
        try {
            $store->save($b);
            $this->fail('the second key must not get the lock');
        } catch (LockConflictedException) {
        }
        $this->assertTrue($store->exists($a));
        $this->assertFalse($store->exists($b));
    }

    public function testDeleteByANonOwnerLeavesTheOwnersLock(): void
    {
        $store = new EphpmStore();
        $resource = 'sf:' . bin2hex(random_bytes(6));
        $owner = new Key($resource);
        $other = new Key($resource);
        $store->save($owner);
        $store->delete($other);
        $this->assertTrue($store->exists($owner));
    }

    public function testBlockingAcquireOfALockThisKeyHoldsReturnsAtOnce(): void
    {
        $store = new EphpmStore(initialTtl: 30);
        $key = $this->key();
        $store->save($key);
        ephpm_kv_expire((string) $key, 5);
        $start = microtime(true);
        $store->waitAndSave($key);
        $this->assertLessThan(1.0, microtime(true) - $start, 'a re-entrant wait returns at once');
        $this->assertTrue($store->exists($key), 'the lock is still this key\'s');
        $this->assertGreaterThan(5, ephpm_kv_ttl((string) $key), 'and its TTL was refreshed');
        $other = new Key((string) $key);
        try {
            $store->save($other);
            $this->fail('the lock must never have been free');
        } catch (LockConflictedException) {
        }
    }

    public function testExpiration(): void
    {
        $store = new EphpmStore(1);
        $key = $this->key();
        $store->save($key);
        usleep(1_100_000);
        $this->assertFalse($store->exists($key), 'expired');
    }

    public function testPutOffExpiration(): void
    {
        $store = new EphpmStore(1);
        $key = $this->key();
        $store->save($key);
        $store->putOffExpiration($key, 10);
        usleep(1_100_000);
        $this->assertTrue($store->exists($key), 'the TTL was extended');
        $this->assertGreaterThan(5, ephpm_kv_ttl((string) $key));
    }

    public function testPutOffExpirationOfALockTakenOverFails(): void
    {
        $store = new EphpmStore(1);
        $resource = 'sf:' . bin2hex(random_bytes(6));
        $first = new Key($resource);
        $store->save($first);
        usleep(1_100_000);                         // the first key's lock expired
        $second = new Key($resource);
        $store->save($second);
        try {
            $store->putOffExpiration($first, 10);
            $this->fail('a stale holder must not extend the new holder\'s lock');
        } catch (LockConflictedException) {
        }
        $store->delete($first);                    // and must not release it
        $this->assertTrue($store->exists($second));
    }

    public function testAbortAfterExpiration(): void
    {
        $store = new EphpmStore();
        $key = $this->key();
        $key->reduceLifetime(0.0);                 // already expired when stored
        $this->expectException(LockExpiredException::class);
        $store->save($key);
    }

    public function testThroughTheLockComponent(): void
    {
        $factory = new LockFactory(new EphpmStore());
        $resource = 'sf:' . bin2hex(random_bytes(6));
        $lock = $factory->createLock($resource, 5);
        $this->assertTrue($lock->acquire());
        $this->assertTrue($lock->isAcquired());
        $this->assertFalse($factory->createLock($resource, 5)->acquire());
        $lock->refresh(30);
        $this->assertGreaterThan(20, $lock->getRemainingLifetime());
        $lock->release();
        $this->assertTrue($factory->createLock($resource, 5)->acquire());
    }

    /** A blocking wait released by another process wakes at the release. */
    public function testBlockingWaitReleasedByAnotherProcess(): void
    {
        if (ini_get('ephpm.kv_backend') === 'memory') {
            $this->markTestSkipped('processes share locks only through a shared backend');
        }
        $resource = 'sf:' . bin2hex(random_bytes(6));
        [$proc, $pipes] = ephpm_test_spawn(sprintf(
            '$t = ephpm_kv_lock(%s, 30); echo "held\n"; usleep(500000); echo microtime(true), "\n"; ephpm_kv_unlock(%s, $t);',
            var_export($resource, true), var_export($resource, true)));
        $this->assertSame("held\n", fgets($pipes[1]));
        $lock = (new LockFactory(new EphpmStore()))->createLock($resource, 5);
        $this->assertTrue($lock->acquire(true));  // blocks until the other process releases
        $acquiredAt = microtime(true);
        $releasedAt = (float) fgets($pipes[1]);
        proc_close($proc);
        $this->assertGreaterThanOrEqual($releasedAt - 0.01, $acquiredAt);
        $this->assertLessThan(0.1, $acquiredAt - $releasedAt, 'woken by the release, not a polling step');
        $lock->release();
    }
}
