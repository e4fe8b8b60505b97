<?php

declare(strict_types=1);

namespace Ephpm\Symfony;

use Symfony\Component\Lock\BlockingSharedLockStoreInterface;
use Symfony\Component\Lock\BlockingStoreInterface;
use Symfony\Component\Lock\Exception\InvalidArgumentException;
use Symfony\Component\Lock\Exception\InvalidTtlException;
use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\Store\ExpiringStoreTrait;

/**
 * A Symfony Lock store on ephpm, with shared (read) locks.
 *
 * Each Key carries a random token of its own. A write lock is
 * ephpm_kv_lock(), a read lock ephpm_kv_lock_read(), both with that token
 * and the TTL applied in the same step; releasing is ephpm_kv_unlock() and
 * refreshing ephpm_kv_lock_refresh() with the token, so a holder whose lock
 * expired and was taken by another can neither release nor extend the new
 * holder's lock. Any number of keys read a resource at once; a writer
 * waits for them, and while it waits no new reader enters (writers never
 * starve). The waits happen inside the library, which wakes a waiter on
 * the release instead of polling.
 *
 * A key that holds a read lock and saves it for writing is promoted when
 * it is the only reader, and a key holding the write lock that saves it
 * for reading is demoted. Each is a release and a new grant, two steps: a
 * caller who takes the resource between them wins it, and the key then
 * gets LockConflictedException (a promotion gets its read lock back if
 * that is still free).
 */
final class EphpmStore implements BlockingStoreInterface, BlockingSharedLockStoreInterface
{
    use ExpiringStoreTrait;

    /** How long one wait inside the library may last before it is renewed. */
    private const WAIT_SLICE = 60.0;

    public function __construct(private int $initialTtl = 300)
    {
        if (!\extension_loaded('ephpm')) {
            throw new InvalidArgumentException('The ephpm extension is required.');
        }
        if ($initialTtl < 1) {
            throw new InvalidArgumentException(sprintf('"%s()" expects a strictly positive TTL. Got %d.', __METHOD__, $initialTtl));
        }
    }

    public function save(Key $key): void
    {
        $name = (string) $key;
        $token = $this->token($key);
        $key->reduceLifetime($this->initialTtl);
        if (ephpm_kv_lock($name, $this->initialTtl, 0.0, $token) === false) {
            if (!ephpm_kv_lock_refresh($name, $token, $this->initialTtl)) {
                throw new LockConflictedException();
            }
            if (ephpm_kv_get($name) !== $token) {
                // This key reads the resource: promoted if it reads alone.
                $this->promote($name, $token);
            }
        }
        $this->checkNotExpired($key);
    }

    public function saveRead(Key $key): void
    {
        $this->read($key, false);
    }

    public function waitAndSave(Key $key): void
    {
        $name = (string) $key;
        $token = $this->token($key);
        $key->reduceLifetime($this->initialTtl);
        if (ephpm_kv_lock_refresh($name, $token, $this->initialTtl)) {
            if (ephpm_kv_get($name) === $token) {
                // This key holds the lock already: refreshed, as save() does.
                $this->checkNotExpired($key);

                return;
            }
            // This key reads the resource: it waits as a writer, which its
            // own read lock would keep out.
            ephpm_kv_unlock($name, $token);
        }
        while (ephpm_kv_lock($name, $this->initialTtl, self::WAIT_SLICE, $token) === false) {
            // Still held after a whole slice: wait again.
        }
        $this->checkNotExpired($key);
    }

    public function waitAndSaveRead(Key $key): void
    {
        $this->read($key, true);
    }

    public function putOffExpiration(Key $key, float $ttl): void
    {
        if ($ttl < 1) {
            throw new InvalidTtlException(sprintf('"%s()" expects a TTL greater or equals to 1 second. Got %s.', __METHOD__, $ttl));
        }
        $seconds = (int) ceil($ttl);
        $key->reduceLifetime($seconds);
        if (!ephpm_kv_lock_refresh((string) $key, $this->token($key), $seconds)) {
            throw new LockConflictedException();
        }
        $this->checkNotExpired($key);
    }

    public function delete(Key $key): void
    {
        ephpm_kv_unlock((string) $key, $this->token($key));
    }

    public function exists(Key $key): bool
    {
        $name = (string) $key;
        $token = $this->token($key);
        $held = ephpm_kv_get($name);
        if ($held === $token) {
            return true;
        }
        if ($held === null || $held === '' || $held[0] !== "\0") {
            // Free, or held by another key's write lock (a read-held name
            // holds a reader record, which begins with a NUL byte).
            return false;
        }
        // Whether this key's token is among the readers: a refresh to the
        // key's own remaining lifetime says so without lengthening it. A
        // key whose own lifetime has run out holds nothing.
        $left = $key->getRemainingLifetime();
        if ($left !== null && $left <= 0) {
            return false;
        }

        return ephpm_kv_lock_refresh($name, $token, $left === null ? $this->initialTtl : max(1, (int) ceil($left)));
    }

    /**
     * Takes a read lock for this key, waiting for a writer if $blocking, or
     * refreshes the one it has; a write lock of this key is demoted.
     */
    private function read(Key $key, bool $blocking): void
    {
        $name = (string) $key;
        $token = $this->token($key);
        $key->reduceLifetime($this->initialTtl);
        if (!ephpm_kv_lock_refresh($name, $token, $this->initialTtl) || $this->demoted($name, $token)) {
            while (ephpm_kv_lock_read($name, $this->initialTtl, $blocking ? self::WAIT_SLICE : 0.0, $token) === false) {
                if (!$blocking) {
                    throw new LockConflictedException();
                }
                // Still written (or claimed by a waiting writer) after a whole slice: wait again.
            }
        }
        $this->checkNotExpired($key);
    }

    /**
     * Promotes this key's read lock to the write lock if it is the only
     * reader; else, or if another caller takes the resource in between,
     * throws LockConflictedException, keeping (or taking back) the read lock.
     */
    private function promote(string $name, string $token): void
    {
        if ((ephpm_kv_lock_info($name)['holders'] ?? 0) !== 1) {
            throw new LockConflictedException();
        }
        ephpm_kv_unlock($name, $token);
        if (ephpm_kv_lock($name, $this->initialTtl, 0.0, $token) === false) {
            ephpm_kv_lock_read($name, $this->initialTtl, 0.0, $token);
            throw new LockConflictedException();
        }
    }

    /** If this key holds the write lock, gives it up to take a read lock, and says so. */
    private function demoted(string $name, string $token): bool
    {
        return ephpm_kv_get($name) === $token && ephpm_kv_unlock($name, $token);
    }

    private function token(Key $key): string
    {
        if (!$key->hasState(__CLASS__)) {
            $key->setState(__CLASS__, bin2hex(random_bytes(16)));
        }

        return $key->getState(__CLASS__);
    }
}
