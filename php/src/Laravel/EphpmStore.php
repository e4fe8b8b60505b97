<?php

declare(strict_types=1);

namespace Ephpm\Laravel;

use Closure;
use Illuminate\Contracts\Cache\LockProvider;
use Illuminate\Contracts\Cache\Store;
use RuntimeException;

/**
 * A Laravel cache store on ephpm, with atomic locks (LockProvider). Values
 * are serialized, except integers, which are stored as their digits so
 * that increment() and decrement() work on them atomically; floats come
 * back identical. Locks live in the same store as the cache
 * (hasSeparateLockStore() is false), so flush() removes them too and
 * flushLocks() refuses, as Laravel's own stores do.
 */
class EphpmStore implements Store, LockProvider, LockFlushing
{
    public function __construct(private string $prefix = '')
    {
    }

    public function get($key)
    {
        $value = ephpm_kv_get($this->prefix . $key);

        return $value === null ? null : $this->unpack($value);
    }

    /** One call into the store (ephpm_kv_get_many) for all the keys. */
    public function many(array $keys)
    {
        $found = ephpm_kv_get_many(array_map(fn ($key): string => $this->prefix . $key, $keys));
        $values = [];
        foreach ($keys as $key) {
            $value = $found[$this->prefix . $key] ?? null;
            $values[$key] = $value === null ? null : $this->unpack($value);
        }

        return $values;
    }

    public function put($key, $value, $seconds)
    {
        return ephpm_kv_set($this->prefix . $key, $this->pack($value), max(1, (int) $seconds));
    }

    /**
     * One call into the store (ephpm_kv_set_many): each entry is written
     * atomically on its own; a failure throws Ephpm\KvException naming the
     * entry that was not stored (those before it are).
     */
    public function putMany(array $values, $seconds)
    {
        $batch = [];
        foreach ($values as $key => $value) {
            $batch[$this->prefix . $key] = $this->pack($value);
        }

        return ephpm_kv_set_many($batch, max(1, (int) $seconds));
    }

    /**
     * Stores $value for $seconds (0: forever) only if $key has no live
     * entry, in one step on the store (ephpm_kv_setnx): of callers adding
     * one key at once, in every process sharing the store, exactly one gets
     * true. An entry holding null is an entry, as in Laravel's Redis store.
     * Laravel's Repository::add() comes here (without it, it reads then
     * writes, and two callers can both add).
     */
    public function add($key, $value, $seconds)
    {
        return ephpm_kv_setnx($this->prefix . $key, $this->pack($value), max(0, (int) $seconds));
    }

    /**
     * The value of $key; on a miss exactly one caller, among every process
     * sharing the store, runs $callback (ephpm_kv_remember) and stores its
     * value for $seconds (0: forever), while the others wait up to $wait
     * seconds and get that value. EphpmRepository::remember() comes here.
     */
    public function remember(string $key, int $seconds, Closure $callback, float $wait = 10.0): mixed
    {
        return $this->unpack(ephpm_kv_remember($this->prefix . $key, $seconds, fn (): string => $this->pack($callback()), $wait));
    }

    /**
     * Removes $key and returns its value (null if there is none), so that
     * of callers pulling one entry at once, in every process sharing the
     * store, one gets it and the others null: what it read is removed with
     * ephpm_kv_del_if_eq(), and read again if it changed in between.
     * EphpmRepository::pull() comes here.
     */
    public function pull($key): mixed
    {
        do {
            $value = ephpm_kv_get($this->prefix . $key);
            if ($value === null) {
                return null;
            }
        } while (!ephpm_kv_del_if_eq($this->prefix . $key, $value));

        return $this->unpack($value);
    }

    public function increment($key, $value = 1)
    {
        return ephpm_kv_incr_by($this->prefix . $key, (int) $value);
    }

    public function decrement($key, $value = 1)
    {
        return ephpm_kv_incr_by($this->prefix . $key, -(int) $value);
    }

    public function forever($key, $value)
    {
        return ephpm_kv_set($this->prefix . $key, $this->pack($value));
    }

    /** Gives a live entry a new TTL of $seconds from now; false if there is none. */
    public function touch($key, $seconds)
    {
        return ephpm_kv_expire($this->prefix . $key, max(1, (int) $seconds));
    }

    public function forget($key)
    {
        return ephpm_kv_del($this->prefix . $key) > 0;
    }

    /** Removes every entry of the store, not only this prefix's. */
    public function flush()
    {
        return ephpm_kv_flush_all();
    }

    /** @throws RuntimeException always: the locks are in the cache's own store */
    public function flushLocks(): bool
    {
        throw new RuntimeException('Flushing locks is only supported when the lock store is separate from the cache store.');
    }

    public function hasSeparateLockStore(): bool
    {
        return false;
    }

    public function getPrefix()
    {
        return $this->prefix;
    }

    public function lock($name, $seconds = 0, $owner = null)
    {
        return new EphpmLock($this->prefix . $name, $seconds, $owner);
    }

    public function restoreLock($name, $owner)
    {
        return $this->lock($name, 0, $owner);
    }

    /**
     * An integer as its digits, which increment() and decrement() count
     * on in the store; anything else serialized. Floats are serialized
     * too: serialize() writes the digits that read back as the same float
     * (with PHP's default serialize_precision, -1) and keeps 1.0 a float,
     * -0.0 negative, INF and NAN, where (string) keeps 14 digits and
     * writes 1.0 as "1".
     */
    private function pack(mixed $value): string
    {
        return \is_int($value) ? (string) $value : serialize($value);
    }

    /**
     * What pack() wrote; digits as a number (ephpm_kv_incr() writes them
     * too); and any other string that is no serialized value, as a lock's
     * owner is, as it is: a held lock's key read through the cache is its
     * owner, as on Laravel's Redis store.
     */
    private function unpack(string $value): mixed
    {
        if (is_numeric($value)) {
            return $value + 0;
        }
        $unpacked = @unserialize($value);

        return $unpacked === false && $value !== 'b:0;' ? $value : $unpacked;
    }
}
