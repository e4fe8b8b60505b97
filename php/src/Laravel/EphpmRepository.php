<?php

declare(strict_types=1);

namespace Ephpm\Laravel;

use Closure;
use Illuminate\Cache\Repository;

/**
 * Laravel's cache repository with stampede protection: on an EphpmStore,
 * remember() and rememberForever() run their callback in one caller only,
 * among every process sharing the store, while the others wait for its
 * value (EphpmStore::remember, ephpm_kv_remember). Laravel's cache events
 * (CacheHit, CacheMissed, KeyWritten) are not fired for them. On any other
 * store it is Laravel's Repository.
 *
 * Register it with Cache::extend('ephpm', fn ($app) => new EphpmRepository(new EphpmStore('app:'))).
 */
class EphpmRepository extends Repository
{
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
}
