<?php

declare(strict_types=1);

namespace Ephpm\Symfony;

use Symfony\Component\Lock\BlockingStoreInterface;
use Symfony\Component\Lock\Exception\InvalidArgumentException;
use Symfony\Component\Lock\Exception\InvalidTtlException;
use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\Store\ExpiringStoreTrait;

/**
 * A Symfony Lock store on ephpm.
 *
 * Each Key carries a random token of its own. Acquiring is
 * ephpm_kv_setnx() (the TTL applied in the same step), releasing is
 * ephpm_kv_del_if_eq() and refreshing ephpm_kv_expire_if_eq() with that
 * token, so a holder whose lock expired and was taken by another can
 * neither release nor extend the new holder's lock. waitAndSave() waits
 * inside the library, which wakes it when the lock is released instead of
 * polling.
 */
final class EphpmStore implements BlockingStoreInterface
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
        $token = $this->token($key);
        $key->reduceLifetime($this->initialTtl);
        if (!ephpm_kv_setnx((string) $key, $token, $this->initialTtl)
            && !ephpm_kv_expire_if_eq((string) $key, $token, $this->initialTtl)) {
            // Held, and not by this key.
            throw new LockConflictedException();
        }
        $this->checkNotExpired($key);
    }

    public function waitAndSave(Key $key): void
    {
        $token = $this->token($key);
        $key->reduceLifetime($this->initialTtl);
        if (ephpm_kv_expire_if_eq((string) $key, $token, $this->initialTtl)) {
            // This key holds the lock already: refreshed, as save() does.
            $this->checkNotExpired($key);

            return;
        }
        while (ephpm_kv_lock((string) $key, $this->initialTtl, self::WAIT_SLICE, $token) === false) {
            // Still held after a whole slice: wait again.
        }
        $this->checkNotExpired($key);
    }

    public function putOffExpiration(Key $key, float $ttl): void
    {
        if ($ttl < 1) {
            throw new InvalidTtlException(sprintf('"%s()" expects a TTL greater or equals to 1 second. Got %s.', __METHOD__, $ttl));
        }
        $seconds = (int) ceil($ttl);
        $key->reduceLifetime($seconds);
        if (!ephpm_kv_expire_if_eq((string) $key, $this->token($key), $seconds)) {
            throw new LockConflictedException();
        }
        $this->checkNotExpired($key);
    }

    public function delete(Key $key): void
    {
        ephpm_kv_del_if_eq((string) $key, $this->token($key));
    }

    public function exists(Key $key): bool
    {
        return ephpm_kv_get((string) $key) === $this->token($key);
    }

    private function token(Key $key): string
    {
        if (!$key->hasState(__CLASS__)) {
            $key->setState(__CLASS__, bin2hex(random_bytes(16)));
        }

        return $key->getState(__CLASS__);
    }
}
