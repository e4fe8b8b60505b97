<?php

declare(strict_types=1);

namespace Ephpm\Laravel;

use Closure;
use Illuminate\Cache\Repository;

/**
 * Laravel's cache repository with stampede protection: on an EphpmStore,
 * remember() and rememberForever() run their callback in one caller only,
 * among every process sharing the store, while the others wait for its
 * value (EphpmStore::remember, ephpm_kv_remember); so does flexible()
 * (Laravel 11 and later) on a cold key, whose stale refresh is Laravel's
 * own (deferred, under the store's lock). Laravel's cache events
 * (CacheHit, CacheMissed, KeyWritten) are not fired for them. On any other
 * store it is Laravel's Repository.
 *
 * Register it with Cache::extend('ephpm', fn ($app) => new EphpmRepository(new EphpmStore('app:'))).
 */
class EphpmRepository extends Repository
{
    /**
     * What flexible() read, which Laravel's flexible() on a warm key takes
     * in place of reading the same two keys again (many()): one crossing
     * into the store per call, and the read's events fired once.
     */
    private ?array $flexibleRead = null;

    public function many(array $keys)
    {
        if ($this->flexibleRead !== null && array_keys($this->flexibleRead) === $keys) {
            [$found, $this->flexibleRead] = [$this->flexibleRead, null];

            return $found;
        }

        return parent::many($keys);
    }

    /**
     * Laravel's add(), with no TTL (forever) in one step on the store too
     * (EphpmStore::add), where Laravel's own reads then writes.
     */
    public function add($key, $value, $ttl = null)
    {
        $store = $this->getStore();
        if ($ttl !== null || !$store instanceof EphpmStore || $key instanceof \UnitEnum) {
            return parent::add($key, $value, $ttl);
        }

        return $store->add($this->itemKey($key), $value, 0);
    }

    /**
     * Laravel's pull(), with the value given to one caller only
     * (EphpmStore::pull), where Laravel's own reads then forgets and gives
     * it to every caller that read before the first forget. Laravel's
     * cache events are not fired for it.
     */
    public function pull($key, $default = null)
    {
        $store = $this->getStore();
        if (!$store instanceof EphpmStore || $key instanceof \UnitEnum) {
            return parent::pull($key, $default);
        }

        return $store->pull($this->itemKey($key)) ?? value($default);
    }

    public function remember($key, $ttl, Closure $callback)
    {
        $store = $this->getStore();
        $seconds = $this->getSeconds(value($ttl));
        if (!$store instanceof EphpmStore || $seconds <= 0) {
            return parent::remember($key, $ttl, $callback);
        }

        return $store->remember($this->itemKey($key), $seconds, $callback);
    }

    public function rememberForever($key, Closure $callback)
    {
        $store = $this->getStore();
        if (!$store instanceof EphpmStore) {
            return parent::rememberForever($key, $callback);
        }

        return $store->remember($this->itemKey($key), 0, $callback);
    }

    /**
     * Laravel's flexible(), with the cold miss filled once: when the value
     * or its creation time is missing, one caller among every process
     * sharing the store computes the value while the others wait for it
     * (Laravel's own computes it in every caller at once); the creation
     * time is then added if still missing. A warm key is Laravel's, on
     * what this call read.
     */
    public function flexible($key, $ttl, $callback, $lock = null, $alwaysDefer = false)
    {
        $store = $this->getStore();
        $seconds = $this->getSeconds($ttl[1]);
        if (!$store instanceof EphpmStore || $seconds <= 0 || $key instanceof \UnitEnum) {
            return parent::flexible($key, $ttl, $callback, $lock, $alwaysDefer);
        }
        $createdKey = self::FLEXIBLE_CREATED_KEY_PREFIX . $key;
        $found = $this->many([$key, $createdKey]);
        if (!in_array(null, $found, true)) {
            $this->flexibleRead = $found;
            try {
                return parent::flexible($key, $ttl, $callback, $lock, $alwaysDefer);
            } finally {
                $this->flexibleRead = null;
            }
        }
        $value = $store->remember($this->itemKey($key), $seconds, fn () => value($callback));
        $this->add($createdKey, time(), $seconds);

        return $value;
    }
}
